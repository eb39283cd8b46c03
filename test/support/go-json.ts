// JSON read the way a reader other than JSON.parse may read it, for the tests of ambiguous messages: objects
// keep every member in order (repeated keys included), and a member is looked up as Go's encoding/json looks
// a struct field up (the last member whose key matches in any letter case, by Go's folding) or as a reader
// that keeps the first of repeated keys does. An independent reading: it shares no code with src/core.

/** An object with its members in order, repeated keys kept. */
export class Members {
  constructor(readonly pairs: [key: string, value: GoValue][]) {}
}

export type GoValue = null | boolean | number | string | GoValue[] | Members;

/** Parses a JSON text (test-sized: recursive). Throws on text that is not JSON. */
export function parseKeepingKeys(text: string): GoValue {
  let at = 0;
  const ws = () => {
    while (at < text.length && ' \t\r\n'.includes(text[at]!)) at++;
  };
  const value = (): GoValue => {
    ws();
    const c = text[at];
    if (c === '{') {
      at++;
      const pairs: [string, GoValue][] = [];
      ws();
      if (text[at] === '}') {
        at++;
        return new Members(pairs);
      }
      for (;;) {
        ws();
        const key = value();
        if (typeof key !== 'string') throw new Error(`a key at ${at} is not a string`);
        ws();
        if (text[at++] !== ':') throw new Error(`expected ':' at ${at - 1}`);
        pairs.push([key, value()]);
        ws();
        const sep = text[at++];
        if (sep === '}') return new Members(pairs);
        if (sep !== ',') throw new Error(`expected ',' or '}' at ${at - 1}`);
      }
    }
    if (c === '[') {
      at++;
      const items: GoValue[] = [];
      ws();
      if (text[at] === ']') {
        at++;
        return items;
      }
      for (;;) {
        items.push(value());
        ws();
        const sep = text[at++];
        if (sep === ']') return items;
        if (sep !== ',') throw new Error(`expected ',' or ']' at ${at - 1}`);
      }
    }
    // A scalar: JSON.parse reads it exactly, from its own span.
    const start = at;
    if (c === '"') {
      at++;
      while (text[at] !== '"') at += text[at] === '\\' ? 2 : 1;
      at++;
    } else {
      while (at < text.length && !',}] \t\r\n'.includes(text[at]!)) at++;
    }
    return JSON.parse(text.slice(start, at)) as GoValue;
  };
  const result = value();
  ws();
  if (at !== text.length) throw new Error(`data after the value at ${at}`);
  return result;
}

/** Go's foldName: ASCII letters upper-cased, any other rune r as unicode.ToUpper(unicode.ToLower(r)). */
export function goFold(key: string): string {
  let out = '';
  for (const ch of key) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x80) out += ch.toUpperCase();
    // Go's simple case mappings where JavaScript's full ones differ: these fold to ASCII letters.
    else if (cp === 0x130 || cp === 0x131) out += 'I';
    else if (cp === 0x17f) out += 'S';
    else if (cp === 0x212a) out += 'K';
    else {
      const folded = ch.toLowerCase().toUpperCase();
      out += [...folded].length === 1 ? folded : ch;
    }
  }
  return out;
}

/** The member `name` as Go's encoding/json decodes a struct field: the last key that folds to it wins. */
export function goMember(value: GoValue | undefined, name: string): GoValue | undefined {
  if (!(value instanceof Members)) return undefined;
  const want = goFold(name);
  let found: GoValue | undefined;
  for (const [key, member] of value.pairs) if (key === name || goFold(key) === want) found = member;
  return found;
}

/** The member `name` as a reader that keeps the first of repeated keys reads it. */
export function firstMember(value: GoValue | undefined, name: string): GoValue | undefined {
  if (!(value instanceof Members)) return undefined;
  return value.pairs.find(([key]) => key === name)?.[1];
}
