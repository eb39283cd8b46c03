// Recovering the envelope of a message too large to hold (its id, method, and whether it is a result or an
// error) from the bytes as they pass, chunk by chunk, in constant memory. Where a string ends is decided
// by string-scan.ts, as for a whole message: a string JSON.parse would refuse stops the scan.

import {
  asBuffer,
  CLOSE_BRACE,
  COLON,
  COMMA,
  isJsonWhitespace,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
} from './bytes.js';
import { PRIMITIVE_CHAR, STRUCTURAL } from './json-scan.js';
import { INVALID, scanStringPiece } from './string-scan.js';
import type { JsonRpcId } from './types.js';

const KEY_CAP = 256;
const VALUE_CAP = 1024;

// Scanner states (top level of one object).
const S_START = 0;
const S_KEY_OR_END = 1;
const S_KEY = 2;
const S_COLON = 3;
const S_VALUE = 4;
const S_STRING_VALUE = 5;
const S_NESTED_VALUE = 6;
const S_PRIMITIVE_VALUE = 7;
const S_AFTER_VALUE = 8;
const S_EXPECT_KEY = 9;
const S_DONE = 10;
const S_DEAD = 11;

// What the current top-level member is to us.
const ROLE_OTHER = 0;
const ROLE_ID = 1;
const ROLE_METHOD = 2;

const utf8 = new TextDecoder('utf-8');

function parseCaptured(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(utf8.decode(bytes));
  } catch {
    return undefined;
  }
}

/**
 * Incremental, constant-memory scanner of the TOP-LEVEL members of one JSON object fed in chunks, used to
 * recover the id of an oversized message without holding it. The id may come last (the MCP TypeScript SDK
 * writes `{"result":{...},"jsonrpc":"2.0","id":5}`), so the whole object is walked. Only top-level key names
 * (up to 256 bytes) and the `id` / `method` literals (up to 1024 bytes) are copied, into fixed buffers.
 * A repeated key wins last, as in JSON.parse. Input that is not an object stops the scan.
 */
export class EnvelopeHeadScanner {
  private state = S_START;
  /** The start of an escape the previous chunk cut (at most `\uXXXX`), read with the next chunk. */
  private readonly cut = new Uint8Array(16);
  private cutLen = 0;
  /** Depth inside a nested top-level value (1 = just inside its opening bracket). */
  private nestedDepth = 0;
  private nestedInString = false;
  private role = ROLE_OTHER;

  private readonly keyBuf = new Uint8Array(KEY_CAP);
  private keyLen = 0;
  private keyOverflow = false;
  private readonly valueBuf = new Uint8Array(VALUE_CAP);
  private valueLen = 0;
  private valueOverflow = false;

  private id: JsonRpcId | undefined = undefined;
  private method: string | undefined = undefined;
  private hasResult = false;
  private hasError = false;

  push(chunk: Uint8Array): void {
    const buf = asBuffer(chunk);
    const len = buf.length;
    let i = 0;
    while (i < len) {
      switch (this.state) {
        case S_DONE:
        case S_DEAD:
          return;
        case S_START: {
          const c = buf[i]!;
          if (isJsonWhitespace(c)) i++;
          else if (c === OPEN_BRACE) {
            this.state = S_KEY_OR_END;
            i++;
          } else this.state = S_DEAD;
          break;
        }
        case S_KEY_OR_END:
        case S_EXPECT_KEY: {
          const c = buf[i]!;
          if (isJsonWhitespace(c)) i++;
          else if (c === QUOTE) {
            this.keyBuf[0] = QUOTE;
            this.keyLen = 1;
            this.keyOverflow = false;
            this.state = S_KEY;
            i++;
          } else if (c === CLOSE_BRACE && this.state === S_KEY_OR_END) this.state = S_DONE;
          else this.state = S_DEAD;
          break;
        }
        case S_KEY: {
          const q = this.findStringEnd(buf, i);
          if (q === -2) {
            this.state = S_DEAD;
            break;
          }
          const end = q < 0 ? len : q + 1;
          this.captureKey(buf, i, end);
          i = end;
          if (q >= 0) {
            this.finishKey();
            this.state = S_COLON;
          }
          break;
        }
        case S_COLON: {
          const c = buf[i]!;
          if (isJsonWhitespace(c)) i++;
          else if (c === COLON) {
            this.state = S_VALUE;
            i++;
          } else this.state = S_DEAD;
          break;
        }
        case S_VALUE: {
          const c = buf[i]!;
          if (isJsonWhitespace(c)) {
            i++;
            break;
          }
          this.valueLen = 0;
          this.valueOverflow = false;
          if (c === QUOTE) {
            this.captureValue(buf, i, i + 1);
            this.state = S_STRING_VALUE;
            i++;
          } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
            this.nestedDepth = 1;
            this.nestedInString = false;
            this.state = S_NESTED_VALUE;
            i++;
          } else {
            this.state = S_PRIMITIVE_VALUE;
          }
          break;
        }
        case S_STRING_VALUE: {
          const q = this.findStringEnd(buf, i);
          if (q === -2) {
            this.state = S_DEAD;
            break;
          }
          const end = q < 0 ? len : q + 1;
          this.captureValue(buf, i, end);
          i = end;
          if (q >= 0) this.finishValue(false);
          break;
        }
        case S_PRIMITIVE_VALUE: {
          const start = i;
          while (i < len && PRIMITIVE_CHAR[buf[i]!] === 1) i++;
          this.captureValue(buf, start, i);
          // The delimiter (if in this chunk) is left for S_AFTER_VALUE.
          if (i < len) this.finishValue(false);
          break;
        }
        case S_NESTED_VALUE:
          i = this.skipNested(buf, i);
          break;
        case S_AFTER_VALUE: {
          const c = buf[i]!;
          if (isJsonWhitespace(c)) i++;
          else if (c === COMMA) {
            this.state = S_EXPECT_KEY;
            i++;
          } else if (c === CLOSE_BRACE) this.state = S_DONE;
          else this.state = S_DEAD;
          break;
        }
      }
    }
  }

  /** The bytes so far are not the start of a JSON object: no member of an envelope will ever be found. */
  get unreadable(): boolean {
    return this.state === S_DEAD;
  }

  snapshot(): {
    id: JsonRpcId | undefined;
    method: string | undefined;
    hasResult: boolean;
    hasError: boolean;
  } {
    return { id: this.id, method: this.method, hasResult: this.hasResult, hasError: this.hasError };
  }

  /**
   * Index of the closing quote of the string being read, -1 if it does not close in this chunk, or -2 when
   * it is no JSON string (string-scan.ts decides, as for a whole message). An escape the chunk cuts is
   * kept in `cut` and read with the start of the next chunk.
   */
  private findStringEnd(buf: Buffer, from: number): number {
    const len = buf.length;
    let i = from;
    if (this.cutLen > 0) {
      const before = this.cutLen;
      const take = Math.min(len - i, this.cut.length - before);
      this.cut.set(buf.subarray(i, i + take), before);
      const joined = before + take;
      const found = scanStringPiece(this.cut, 0, joined);
      if (found === INVALID) return -2;
      if (found >= 0) {
        this.cutLen = 0;
        return i + found - 1 - before;
      }
      const next = -2 - found;
      if (next < before) {
        // Still cut: this chunk ended before the escape did.
        this.cut.copyWithin(0, next, joined);
        this.cutLen = joined - next;
        return -1;
      }
      this.cutLen = 0;
      i += next - before;
    }
    const found = scanStringPiece(buf, i, len);
    if (found === INVALID) return -2;
    if (found >= 0) return found - 1;
    const next = -2 - found;
    this.cut.set(buf.subarray(next, len));
    this.cutLen = len - next;
    return -1;
  }

  /** Skips through a nested top-level value; returns where this chunk's scan continues. */
  private skipNested(buf: Buffer, from: number): number {
    const len = buf.length;
    let i = from;
    while (i < len) {
      if (this.nestedInString) {
        const q = this.findStringEnd(buf, i);
        if (q === -2) {
          this.state = S_DEAD;
          return len;
        }
        if (q < 0) return len;
        this.nestedInString = false;
        i = q + 1;
        continue;
      }
      const cls = STRUCTURAL[buf[i]!];
      i++;
      if (cls === 1) this.nestedInString = true;
      else if (cls === 2) this.nestedDepth++;
      else if (cls === 3 && --this.nestedDepth === 0) {
        this.finishValue(true);
        return i;
      }
    }
    return i;
  }

  private captureKey(buf: Buffer, start: number, end: number): void {
    if (this.keyOverflow) return;
    const n = end - start;
    if (this.keyLen + n > KEY_CAP) {
      this.keyOverflow = true;
      return;
    }
    this.keyBuf.set(buf.subarray(start, end), this.keyLen);
    this.keyLen += n;
  }

  private captureValue(buf: Buffer, start: number, end: number): void {
    if (this.role === ROLE_OTHER || this.valueOverflow) return;
    const n = end - start;
    if (this.valueLen + n > VALUE_CAP) {
      this.valueOverflow = true;
      return;
    }
    this.valueBuf.set(buf.subarray(start, end), this.valueLen);
    this.valueLen += n;
  }

  private finishKey(): void {
    this.role = ROLE_OTHER;
    if (this.keyOverflow) return;
    const key = parseCaptured(this.keyBuf.subarray(0, this.keyLen));
    if (key === 'id') this.role = ROLE_ID;
    else if (key === 'method') this.role = ROLE_METHOD;
    else if (key === 'result') this.hasResult = true;
    else if (key === 'error') this.hasError = true;
  }

  private finishValue(nested: boolean): void {
    this.state = S_AFTER_VALUE;
    if (this.role === ROLE_OTHER) return;
    const value =
      nested || this.valueOverflow ? undefined : parseCaptured(this.valueBuf.subarray(0, this.valueLen));
    if (this.role === ROLE_ID) {
      this.id = typeof value === 'string' || typeof value === 'number' || value === null ? value : undefined;
    } else {
      this.method = typeof value === 'string' ? value : undefined;
    }
    this.role = ROLE_OTHER;
  }
}
