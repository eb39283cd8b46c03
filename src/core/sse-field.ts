// Which field an SSE line is, told from the first bytes of its name: data, event, id or retry (WHATWG);
// any other name is a field the framer ignores.

// The fields, as the framer numbers them.
export const OTHER = 0;
export const DATA = 1;
export const EVENT = 2;
export const ID = 3;
export const RETRY = 4;

/** Longest field name we need to tell apart ("event", "retry"); longer names are unknown fields. */
export const NAME_CAP = 5;

/** The field whose name is the first `nameLength` bytes of `b` (at most NAME_CAP of them are kept). */
export function fieldOfName(b: Uint8Array, nameLength: number): number {
  switch (nameLength) {
    case 2:
      return b[0] === 0x69 && b[1] === 0x64 ? ID : OTHER; // id
    case 4:
      return b[0] === 0x64 && b[1] === 0x61 && b[2] === 0x74 && b[3] === 0x61 ? DATA : OTHER; // data
    case 5:
      if (b[0] === 0x65 && b[1] === 0x76 && b[2] === 0x65 && b[3] === 0x6e && b[4] === 0x74) return EVENT;
      if (b[0] === 0x72 && b[1] === 0x65 && b[2] === 0x74 && b[3] === 0x72 && b[4] === 0x79) return RETRY;
      return OTHER;
    default:
      return OTHER;
  }
}
