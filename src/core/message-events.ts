// An answer made of messages (a stdio child's lines) as the SSE inspector judges it, without framing bytes
// only to parse them again: each message is one event whose data is the message's bytes, and whose bytes for
// the client are the SSE framing around them (sseFraming, the one place it is built). A message longer than
// the inspector holds is reported as SseFramer reports an oversized event, at the byte that crosses the
// bound, and no more of it than maxDataBytes + 1 bytes is held.
import { Buffer } from 'node:buffer';
import type { SseItem } from './sse-item.js';
import { concatBytes, NO_BYTES, retainable } from './sse-pieces.js';

/**
 * One event of an answer made of messages: a piece of the message in progress (`last`: the message is
 * complete after it; a whole message is one piece), or the message in progress broke off (its source died
 * inside it; `detail` says how).
 */
export type MessageEvent =
  | { kind: 'piece'; bytes: Uint8Array; last: boolean }
  | { kind: 'cut'; detail: string };

const DATA = Buffer.from('data: ');
const EVENT_END = Buffer.from('\n\n');

/**
 * The client's bytes for one message event: `data: ` before a message's first piece, its bytes, a blank line
 * after its last; a message cut short is closed the same way, so what follows stands alone.
 */
export function sseFraming(event: MessageEvent, inMessage: boolean): Uint8Array[] {
  if (event.kind === 'cut') return inMessage ? [EVENT_END] : [];
  const framed: Uint8Array[] = inMessage ? [] : [DATA];
  if (event.bytes.length > 0) framed.push(event.bytes);
  if (event.last) framed.push(EVENT_END);
  return framed;
}

/** Message events to the items SseFramer would report for their SSE framing (see sse-item.ts). */
export class MessageSseItems {
  #inMessage = false;
  /** The framed bytes of the message in progress while it is held (its `raw`). */
  #raw: Uint8Array[] = [];
  #data: Uint8Array[] = [];
  #heldBytes = 0;
  /** Data bytes of the message in progress once it crossed its bound (it is no longer held). */
  #oversizedBytes: number | undefined;
  /** The bound of the message in progress: maxDataBytes, or what holdPast raised it to (asked once per message). */
  #bound: number;
  #askedHoldPast = false;

  /** holdPast: as SseFramerOptions.holdPast, asked when a message first crosses maxDataBytes. */
  constructor(
    private readonly maxDataBytes: number,
    private readonly holdPast?: (heldData: Uint8Array, id: string | undefined) => number,
  ) {
    this.#bound = maxDataBytes;
  }

  /** A message is in progress: its next piece continues it. */
  get inMessage(): boolean {
    return this.#inMessage;
  }

  /** Data bytes held of the message in progress (at most maxDataBytes). */
  get heldBytes(): number {
    return this.#heldBytes;
  }

  /** The items of one event; `framed` is its sseFraming, the bytes the client gets for it. */
  push(event: MessageEvent, framed: readonly Uint8Array[]): SseItem[] {
    if (event.kind === 'cut') {
      if (!this.#inMessage) return [];
      // The blank line that closes the cut message is part of its bytes when it is held.
      if (this.#oversizedBytes === undefined) for (const piece of framed) this.#raw.push(piece);
      return [this.#messageEnd(true)];
    }
    this.#inMessage = true;
    const items: SseItem[] = [];
    const bytes = event.bytes;
    if (this.#oversizedBytes !== undefined) {
      this.#oversizedBytes += bytes.length;
      if (bytes.length > 0) items.push({ type: 'oversized-data', data: bytes });
    } else if (this.#heldBytes + bytes.length > this.#bound && this.#stillCrosses(bytes)) {
      // Crossed at this piece: its first byte past the bound ends what is held, as SseFramer reports it.
      const room = this.#bound + 1 - this.#heldBytes;
      this.#data.push(bytes.subarray(0, room));
      const heldData = concatBytes(this.#data);
      this.#oversizedBytes = this.#heldBytes + bytes.length;
      this.#raw = [];
      this.#data = [];
      this.#heldBytes = 0;
      items.push({ type: 'oversized-start', heldData, id: undefined });
      if (bytes.length > room) items.push({ type: 'oversized-data', data: bytes.subarray(room) });
    } else {
      // One kept copy (if any) serves both the forwarded bytes and the data that is judged.
      const kept = retainable(bytes);
      for (const piece of framed) this.#raw.push(piece === bytes ? kept : piece);
      if (bytes.length > 0) this.#data.push(kept);
      this.#heldBytes += bytes.length;
    }
    if (event.last) items.push(this.#messageEnd(true));
    return items;
  }

  /** The events ended: a message still in progress is an unterminated block. */
  end(): SseItem[] {
    return this.#inMessage ? [this.#messageEnd(false)] : [];
  }

  /** The message crosses its bound at `bytes`: whether it still does once holdPast was asked (once per message). */
  #stillCrosses(bytes: Uint8Array): boolean {
    if (this.holdPast !== undefined && !this.#askedHoldPast) {
      this.#askedHoldPast = true;
      const room = this.#bound + 1 - this.#heldBytes;
      const bound = this.holdPast(concatBytes([...this.#data, bytes.subarray(0, room)]), undefined);
      if (bound > this.#bound) this.#bound = bound;
    }
    return this.#heldBytes + bytes.length > this.#bound;
  }

  #messageEnd(terminated: boolean): SseItem {
    const oversized = this.#oversizedBytes;
    const raw = this.#raw;
    const data = this.#data;
    this.#bound = this.maxDataBytes;
    this.#askedHoldPast = false;
    this.#inMessage = false;
    this.#raw = [];
    this.#data = [];
    this.#heldBytes = 0;
    this.#oversizedBytes = undefined;
    if (oversized !== undefined) {
      const framing = DATA.length + (terminated ? EVENT_END.length : 0);
      return {
        type: 'oversized-end',
        rawBytes: framing + oversized,
        dataBytes: oversized,
        hadData: true,
        event: undefined,
        id: undefined,
        bound: 'data',
        terminated,
      };
    }
    if (!terminated) return { type: 'tail', raw };
    const joined = data.length === 0 ? NO_BYTES : concatBytes(data);
    return { type: 'event', raw, data: joined, event: undefined, id: undefined, retry: undefined };
  }
}
