// The keys one level of a message is read by, and how a key as sent stands to them. JSON leaves repeated keys
// open: JSON.parse keeps the last, other readers the first, and Go's encoding/json (used by many MCP servers)
// matches a key in any letter case, so that `"NAME"` is its `name`. A key the edge reads that is repeated, or
// spelled in another letter case, may make an upstream run something other than what the edge judged; this
// says which keys those are. Per member, never per byte: a key is compared only when it is short enough to
// spell a name.

import { BACKSLASH, decodeUtf8 } from './bytes.js';

/** The names one object level is read by (their order gives their indices), prepared for matching. */
export interface KeyNames {
  readonly names: readonly string[];
  /** The names in lower case, by index. */
  readonly lowered: readonly string[];
  /** For each length in bytes, the indices of the names that long. */
  readonly byLength: ReadonlyMap<number, readonly number[]>;
  /** By lower-case spelling, the index. */
  readonly byLowered: ReadonlyMap<string, number>;
  /** The longest key literal (quotes aside) that can spell a name: 6 bytes per character, as `\uXXXX`. */
  readonly longestLiteral: number;
}

export function keyNames(names: readonly string[]): KeyNames {
  const byLength = new Map<number, number[]>();
  const byLowered = new Map<string, number>();
  names.forEach((name, index) => {
    byLength.set(name.length, [...(byLength.get(name.length) ?? []), index]);
    byLowered.set(name.toLowerCase(), index);
  });
  return {
    names,
    lowered: names.map((name) => name.toLowerCase()),
    byLength,
    byLowered,
    longestLiteral: 6 * Math.max(...names.map((name) => name.length)),
  };
}

/** A key that is none of the names. */
export const NO_NAME = -1;

/** The result of matchKey for the name of index `index`: spelled as it is, or in another letter case. */
const exactly = (index: number): number => index << 1;
const inOtherCase = (index: number): number => (index << 1) | 1;
/** The name's index of a result of matchKey (NO_NAME stays negative). */
export const nameIndex = (match: number): number => match >> 1;
/** The result of matchKey is a name spelled as it is (escapes aside). */
export const isExact = (match: number): boolean => match >= 0 && (match & 1) === 0;

/** ASCII upper-case letters lowered; every other byte as it is. */
const LOWER = new Uint8Array(128);
for (let c = 0; c < 128; c++) LOWER[c] = c >= 0x41 && c <= 0x5a ? c + 0x20 : c;

/**
 * The letters other than ASCII that Go's encoding/json folds to an ASCII one (unicode.ToUpper(ToLower(r))):
 * the dotted and dotless i, the long s, the Kelvin sign.
 */
const FOLDS_TO_ASCII: ReadonlyMap<number, string> = new Map([
  [0x130, 'i'],
  [0x131, 'i'],
  [0x17f, 's'],
  [0x212a, 'k'],
]);

/** A key's text in lower case as Go folds it toward ASCII; other characters as they are. */
function foldedText(text: string): string {
  let out = '';
  for (let k = 0; k < text.length; k++) {
    const c = text.charCodeAt(k);
    out += c < 128 ? String.fromCharCode(LOWER[c]!) : (FOLDS_TO_ASCII.get(c) ?? text[k]);
  }
  return out;
}

/** matchKey for a literal with escapes or characters beyond ASCII: decoded (it is short), then folded. */
function matchDecoded(buf: Uint8Array, start: number, end: number, names: KeyNames): number {
  const text = keyText(buf, start, end);
  const index = names.byLowered.get(foldedText(text));
  if (index === undefined) return NO_NAME;
  return text === names.names[index] ? exactly(index) : inOtherCase(index);
}

/**
 * How the valid key literal `buf[start, end)` (quotes included) stands to `names`: exactly(i) when it spells
 * name i (escapes decoded), a result for which isExact is false when it spells name i only in another
 * letter case (as Go's encoding/json matches keys), NO_NAME otherwise.
 */
export function matchKey(buf: Uint8Array, start: number, end: number, names: KeyNames): number {
  const first = start + 1;
  const inner = end - 1 - first;
  if (inner > names.longestLiteral) return NO_NAME;
  for (let k = first; k < end - 1; k++) {
    const c = buf[k]!;
    if (c === BACKSLASH || c >= 0x80) return matchDecoded(buf, start, end, names);
  }
  const candidates = names.byLength.get(inner);
  if (candidates === undefined) return NO_NAME;
  for (const index of candidates) {
    const name = names.names[index]!;
    const lowered = names.lowered[index]!;
    let otherCase = false;
    let k = 0;
    for (; k < inner; k++) {
      const c = buf[first + k]!;
      if (c === name.charCodeAt(k)) continue;
      if (LOWER[c] !== lowered.charCodeAt(k)) break;
      otherCase = true;
    }
    if (k === inner) return otherCase ? inOtherCase(index) : exactly(index);
  }
  return NO_NAME;
}

/** Where in a message a key the edge reads lies. */
export type KeyPlace = 'message' | 'params' | 'params._meta';

/** A key the edge reads that another reader may read otherwise: repeated, or spelled in another letter case. */
export interface AmbiguousKey {
  in: KeyPlace;
  /** The key as the edge reads it. */
  key: string;
  /** The key as sent (escapes decoded), when only letter case tells it from `key`; undefined: `key` repeated. */
  sentAs: string | undefined;
  /** The message's `id` is itself ambiguous (this key or another): no one id can answer it. */
  idIsAmbiguous: boolean;
}

/** The text of a key literal that matched a name (short by then: at most 6 bytes per character of it). */
function keyText(buf: Uint8Array, start: number, end: number): string {
  return JSON.parse(decodeUtf8(buf, start, end)) as string;
}

// What the keys of the message being scanned showed (scanning is synchronous: one record serves).
let firstAmbiguous: Omit<AmbiguousKey, 'idIsAmbiguous'> | undefined;
let idIsAmbiguous = false;

/** A message's scan begins: nothing ambiguous seen yet. */
export function startKeys(): void {
  firstAmbiguous = undefined;
  idIsAmbiguous = false;
}

/** The first ambiguous key of the message scanned since startKeys(), if any. */
export function ambiguousKeyFound(): AmbiguousKey | undefined {
  return firstAmbiguous === undefined ? undefined : { ...firstAmbiguous, idIsAmbiguous };
}

/**
 * Notes a member of an object at `place` whose key matched a name of `names` (`match`, from matchKey);
 * `seen` has a bit for each name met before in that object. Returns the names met, this one included.
 */
export function noteKey(
  buf: Uint8Array,
  keyStart: number,
  keyEnd: number,
  names: KeyNames,
  place: KeyPlace,
  match: number,
  seen: number,
): number {
  const index = nameIndex(match);
  const bit = 1 << index;
  const exact = isExact(match);
  if (!exact || (seen & bit) !== 0) {
    const key = names.names[index]!;
    if (place === 'message' && key === 'id') idIsAmbiguous = true;
    firstAmbiguous ??= { in: place, key, sentAs: exact ? undefined : keyText(buf, keyStart, keyEnd) };
  }
  return seen | bit;
}
