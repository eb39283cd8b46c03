// The message reader tells which keys the edge reads another reader may read otherwise: a key repeated (one
// reader keeps the first, JSON.parse the last) or spelled in another letter case (Go's encoding/json matches
// keys in any case). Checked key by key, in every spelling JSON allows, at every level the edge reads, and
// against an independent reader (test/support/go-json.ts).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AmbiguousKey } from '../../src/core/key-names.js';
import { ambiguousKeyOf, scanJsonRpcBody, scanMessage } from '../../src/core/message-scan.js';
import {
  firstMember,
  type GoValue,
  goFold,
  goMember,
  Members,
  parseKeepingKeys,
} from '../support/go-json.js';
import { utf8 } from '../support/json-samples.js';

const ambiguityOf = (text: string): AmbiguousKey | undefined => {
  const scanned = scanMessage(utf8(text));
  expect(scanned, text).toBeDefined();
  return scanned?.ambiguous;
};

/** A request with `envelope` members, `params` members and `_meta` members spliced in. */
function request(envelope = '', params = '', meta = ''): string {
  const metaMember = meta === '' ? '' : `,"_meta":{${meta}}`;
  return `{"jsonrpc":"2.0","id":1,"method":"tools/call"${envelope},"params":{"arguments":{}${params}${metaMember}}}`;
}

const LEVELS: { place: AmbiguousKey['in']; keys: string[]; write: (member: string) => string }[] = [
  {
    place: 'message',
    keys: ['jsonrpc', 'id', 'method', 'params', 'result', 'error'],
    write: (m) => request(`,${m}`),
  },
  {
    place: 'params',
    keys: ['name', 'uri', 'cursor', 'requestId', '_meta'],
    write: (m) => request('', `,${m}`),
  },
  {
    place: 'params._meta',
    keys: ['progressToken', 'io.modelcontextprotocol/clientInfo'],
    write: (m) => request('', '', `"other":1,${m}`),
  },
];

/** Every character of `key` written as \uXXXX. */
const escaped = (key: string): string =>
  [...key].map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');

describe('each key the edge reads, at its level', () => {
  for (const { place, keys, write } of LEVELS) {
    for (const key of keys) {
      // The envelope already holds jsonrpc, id and method; params holds arguments; _meta holds other.
      const present = place === 'message' && ['jsonrpc', 'id', 'method', 'params'].includes(key);
      const once = (spelled: string) =>
        present ? write(`"${spelled}":7`) : write(`"${key}":7,"${spelled}":8`);

      it(`${place} ${key}: repeated, in any escaping, is ambiguous`, () => {
        for (const spelled of [key, escaped(key), `${escaped(key[0]!)}${key.slice(1)}`]) {
          expect(ambiguityOf(once(spelled))).toEqual({
            in: place,
            key,
            sentAs: undefined,
            idIsAmbiguous: place === 'message' && key === 'id',
          });
        }
      });

      it(`${place} ${key}: in another letter case, alone or beside it, is ambiguous`, () => {
        const upper = key.toUpperCase();
        // The first letter in the other case ("Name", "_Meta", "Io.model...").
        const mixed = key.replace(/[a-z]/, (c) => c.toUpperCase());
        for (const spelled of [upper, mixed]) {
          for (const text of [once(spelled), write(`"${spelled}":7`)]) {
            expect(ambiguityOf(text), text).toMatchObject({ in: place, key, sentAs: spelled });
          }
        }
        // Escaped, the key as sent is told decoded.
        expect(ambiguityOf(write(`"${escaped(upper)}":7`))).toMatchObject({ key, sentAs: upper });
      });

      it(`${place} ${key}: once, spelled exactly or escaped, is not`, () => {
        if (present) return;
        expect(ambiguityOf(write(`"${key}":7`))).toBeUndefined();
        expect(ambiguityOf(write(`"${escaped(key)}":7`))).toBeUndefined();
      });
    }
  }
});

describe('letter case as Go folds it', () => {
  it('the letters beyond ASCII that Go folds to i, s and k count as those letters', () => {
    // U+0130 and U+0131 (dotted and dotless i), U+017F (long s), U+212A (Kelvin sign).
    expect(ambiguityOf(request('', ',"name":"a","\u0130d":1'))).toBeUndefined();
    expect(ambiguityOf(request(',"\u0130d":2'))).toMatchObject({
      key: 'id',
      sentAs: '\u0130d',
      idIsAmbiguous: true,
    });
    expect(ambiguityOf(request(',"\u0131d":2'))).toMatchObject({ key: 'id', sentAs: '\u0131d' });
    expect(ambiguityOf(request('', ',"cur\u017For":"c"'))).toMatchObject({
      key: 'cursor',
      sentAs: 'cur\u017For',
    });
    expect(ambiguityOf(request('', ',"cur\\u017for":"c"'))).toMatchObject({ key: 'cursor' });
    expect(ambiguityOf(request('', '', '"progressTo\u212Aen":1'))).toMatchObject({
      in: 'params._meta',
      key: 'progressToken',
    });
    for (const spelled of ['\u0130d', '\u0131d', 'cur\u017For', 'progressTo\u212Aen']) {
      const key = spelled
        .replace(/[\u0130\u0131]/, 'i')
        .replace('\u017F', 's')
        .replace('\u212A', 'k');
      expect(goFold(spelled)).toBe(goFold(key));
    }
  });

  it('other letters beyond ASCII, and names that only look alike, are not the key', () => {
    for (const other of ['n\u00e4me', 'nam', 'names', 'na_me', 'n\u0430me', 'ID_', 'Ids', '_META']) {
      const text = request('', `,"${other}":1`);
      if (other === '_META') expect(ambiguityOf(text)).toMatchObject({ key: '_meta', sentAs: '_META' });
      else expect(ambiguityOf(text), other).toBeUndefined();
    }
  });
});

describe('only the levels the edge reads', () => {
  it.each([
    [
      'a key repeated in arguments',
      request('', ',"name":"t"').replace('"arguments":{}', '"arguments":{"name":1,"name":2,"NAME":3}'),
    ],
    ['params keys repeated in _meta', request('', '', '"name":1,"name":2,"Cursor":3')],
    [
      'progressToken repeated in params (it is read in _meta)',
      request('', ',"progressToken":1,"progressToken":2'),
    ],
    ['envelope keys repeated in params', request('', ',"id":1,"id":2,"Method":3')],
    [
      'keys repeated inside clientInfo',
      request('', '', '"io.modelcontextprotocol/clientInfo":{"name":"a","name":"b"}'),
    ],
    [
      'keys repeated inside result',
      '{"jsonrpc":"2.0","id":1,"result":{"content":[],"content":[],"isError":true,"IsError":false}}',
    ],
    ['keys repeated inside error', '{"jsonrpc":"2.0","id":1,"error":{"code":1,"code":2,"Message":"m"}}'],
    [
      'a key repeated in a params that is not an object',
      '{"jsonrpc":"2.0","id":1,"method":"m","params":[{"name":1,"name":2}]}',
    ],
  ])('%s: not ambiguous', (_case, text) => {
    expect(ambiguityOf(text)).toBeUndefined();
  });

  it('a second params or _meta is itself the ambiguous key; each is read for its own keys', () => {
    expect(
      ambiguityOf('{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a"},"params":{"name":"b"}}'),
    ).toMatchObject({
      in: 'message',
      key: 'params',
    });
    expect(ambiguityOf(request('', ',"_meta":{"progressToken":1}', '"progressToken":2'))).toMatchObject({
      in: 'params',
      key: '_meta',
    });
  });
});

describe('what the reader reports', () => {
  it('the first ambiguous key, and whether the id is ambiguous anywhere in the message', () => {
    const nameThenId = '{"jsonrpc":"2.0","method":"m","params":{"name":1,"name":2},"id":1,"id":2}';
    expect(ambiguityOf(nameThenId)).toEqual({
      in: 'params',
      key: 'name',
      sentAs: undefined,
      idIsAmbiguous: true,
    });
    const nameOnly = '{"jsonrpc":"2.0","method":"m","params":{"name":1,"NAME":2},"id":1}';
    expect(ambiguityOf(nameOnly)).toEqual({
      in: 'params',
      key: 'name',
      sentAs: 'NAME',
      idIsAmbiguous: false,
    });
  });

  it('the message is read as JSON.parse reads it, whatever its ambiguity: the last exactly spelled key wins', () => {
    const scanned = scanMessage(
      utf8('{"jsonrpc":"2.0","id":1,"ID":2,"method":"tools/call","params":{"name":"small","NAME":"big"}}'),
    );
    expect(scanned?.classified).toEqual({ kind: 'request', id: 1, method: 'tools/call', tool: 'small' });
    expect(scanned?.params?.name).toBe('small');
  });

  it('each message of a batch has its own; a scan starts afresh', () => {
    const batch = `[${request()},${request('', ',"name":1,"name":2')},${request()}]`;
    const body = scanJsonRpcBody(utf8(batch));
    expect(body?.messages.map((m) => m.ambiguous?.key)).toEqual([undefined, 'name', undefined]);
  });

  it('ambiguousKeyOf reads bytes that are not UTF-8 as a lossy decoder does', () => {
    const bad = Buffer.concat([
      Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"text":"'),
      Buffer.from([0xff]),
      Buffer.from('"},"ID":2}'),
    ]);
    expect(ambiguousKeyOf(bad)).toMatchObject({ key: 'id', sentAs: 'ID' });
    expect(ambiguousKeyOf(Buffer.from([0x7b, 0xff]))).toBeUndefined();
  });

  it('a key too long to spell a name, however escaped, is passed over', () => {
    expect(ambiguityOf(request('', `,"${'\\u006e'.repeat(200)}":1`))).toBeUndefined();
  });
});

// ---- against an independent reader ----------------------------------------------------------------------

const READ: Record<AmbiguousKey['in'], string[]> = {
  message: ['jsonrpc', 'id', 'method', 'params', 'result', 'error'],
  params: ['_meta', 'name', 'uri', 'requestId', 'cursor'],
  'params._meta': ['progressToken', 'io.modelcontextprotocol/clientInfo'],
};

/** Whether some key at `place` another reader may take otherwise: repeated, or only Go's folding makes it a name. */
function oracleAmbiguous(value: GoValue | undefined, place: AmbiguousKey['in']): boolean {
  if (!(value instanceof Members)) return false;
  const names = READ[place];
  const counts = new Map<string, number>();
  for (const [key] of value.pairs) {
    const name = names.find((n) => goFold(n) === goFold(key));
    if (name === undefined) continue;
    if (key !== name) return true;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return [...counts.values()].some((n) => n > 1);
}

/** The last exactly spelled member, as JSON.parse reads it. */
function lastMember(value: GoValue | undefined, name: string): GoValue | undefined {
  if (!(value instanceof Members)) return undefined;
  return value.pairs.findLast(([key]) => key === name)?.[1];
}

/** A read key as three readers read it: JSON.parse (last), a first-wins reader, Go (last, any case). */
function readings(message: GoValue, path: string[]): unknown[] {
  const readers = [lastMember, firstMember, goMember];
  return readers.map((member) => {
    let at: GoValue | undefined = message;
    for (const step of path) at = member(at, step);
    return JSON.stringify(at);
  });
}

/** Keys that spell, nearly spell, or do not spell the names; written plainly or escaped. */
const keyAt = (names: string[]) =>
  fc
    .tuple(
      fc.constantFrom(...names, 'arguments', 'other', 'nam', 'ids'),
      fc.constantFrom('as is', 'upper', 'first upper', 'escaped', 'go fold'),
    )
    .map(([name, spelling]) => {
      if (spelling === 'upper')
        return { key: name.toUpperCase(), literal: JSON.stringify(name.toUpperCase()) };
      if (spelling === 'first upper') {
        const key = name[0]!.toUpperCase() + name.slice(1);
        return { key, literal: JSON.stringify(key) };
      }
      if (spelling === 'escaped') return { key: name, literal: `"${escaped(name)}"` };
      if (spelling === 'go fold') {
        const key = name.replace('s', '\u017F').replace('k', '\u212A').replace('i', '\u0131');
        return { key, literal: JSON.stringify(key) };
      }
      return { key: name, literal: JSON.stringify(name) };
    });

const scalar = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constantFrom('"a"', '"b"', 'null'));
const members = (names: string[], inner: fc.Arbitrary<string>) =>
  fc
    .array(fc.tuple(keyAt(names), inner), { maxLength: 5 })
    .map((pairs) => `{${pairs.map(([k, v]) => `${k.literal}:${v}`).join(',')}}`);

const metaObject = members(READ['params._meta'], scalar.map(String));
const paramsObject = members(READ.params, fc.oneof(scalar.map(String), metaObject));
const envelopeObject = members(READ.message, fc.oneof(scalar.map(String), paramsObject));

describe('property: against a reader that keeps every key', () => {
  it('ambiguous exactly when a read key is repeated or only another letter case makes it one', () => {
    fc.assert(
      fc.property(envelopeObject, (text) => {
        const scanned = scanMessage(utf8(text));
        expect(scanned, text).toBeDefined();
        const tree = parseKeepingKeys(text);
        const params = lastMember(tree, 'params');
        const meta = lastMember(params, '_meta');
        // The edge reads the params and _meta JSON.parse keeps; earlier ones are repeated keys themselves.
        const expected =
          oracleAmbiguous(tree, 'message') ||
          oracleAmbiguous(params, 'params') ||
          oracleAmbiguous(meta, 'params._meta');
        expect(scanned?.ambiguous !== undefined, text).toBe(expected);
      }),
      { numRuns: 3000 },
    );
  });

  it('when nothing is ambiguous, every reader reads every key the edge reads as the edge does', () => {
    const paths = [
      ...READ.message.map((k) => [k]),
      ...READ.params.map((k) => ['params', k]),
      ...READ['params._meta'].map((k) => ['params', '_meta', k]),
    ];
    fc.assert(
      fc.property(envelopeObject, (text) => {
        if (scanMessage(utf8(text))?.ambiguous !== undefined) return;
        const tree = parseKeepingKeys(text);
        for (const path of paths) {
          const [parse, first, go] = readings(tree, path);
          expect(first, `${text} ${path.join('.')}`).toBe(parse);
          expect(go, `${text} ${path.join('.')}`).toBe(parse);
        }
      }),
      { numRuns: 3000 },
    );
  });
});
