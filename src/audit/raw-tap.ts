// The bytes of each message a server sent, as it sent them, kept by the id of the request it answers. The
// SDK client parses what arrives; audit measures what was sent, so both transports hand every message's
// bytes here before the SDK sees them (http-transport.ts, stdio-transport.ts).

import { isRecord } from '../core/bytes.js';
import { idKey } from '../core/client-names.js';
import { EnvelopeHeadScanner } from '../core/envelope-head.js';
import type { JsonRpcId } from '../core/types.js';

/** One message from the server: its exact bytes and their JSON.parse value. */
export interface RawMessage {
  bytes: Uint8Array;
  value: unknown;
}

/** An answer past --max-message-bytes: not held, only its size is known. */
export interface OversizedAnswer {
  totalBytes: number;
}

/** Answers not yet taken are few (audit sends one request at a time); past this many the oldest go. */
const MAX_KEPT = 64;

const utf8 = new TextDecoder('utf-8', { fatal: true });

export class RawTap {
  readonly #answers = new Map<string, RawMessage | OversizedAnswer>();
  /** The id of the last request sent: audit's calls are sequential, so it names the answer awaited. */
  lastRequestId: JsonRpcId | undefined;

  constructor(readonly maxMessageBytes: number) {}

  /** A message as it arrived; only answers (a result or an error with an id) are kept. */
  record(bytes: Uint8Array): void {
    let value: unknown;
    try {
      value = JSON.parse(utf8.decode(bytes));
    } catch {
      return;
    }
    if (!isRecord(value) || value.method !== undefined) return;
    const id = value.id;
    if (typeof id !== 'string' && typeof id !== 'number') return;
    this.#keep(idKey(id), { bytes, value });
  }

  recordOversized(id: JsonRpcId | undefined, totalBytes: number): void {
    if (id === undefined || id === null) return;
    this.#keep(idKey(id), { totalBytes });
  }

  /** What was sent in answer to `id`, once. */
  take(id: JsonRpcId | undefined): RawMessage | OversizedAnswer | undefined {
    if (id === undefined) return undefined;
    const key = idKey(id);
    const found = this.#answers.get(key);
    this.#answers.delete(key);
    return found;
  }

  /** Notes the id of a request about to be sent (its JSON text, or its value). */
  noteSent(message: unknown): void {
    if (isRecord(message) && typeof message.method === 'string') {
      const id = message.id;
      if (typeof id === 'string' || typeof id === 'number') this.lastRequestId = id;
    }
  }

  #keep(key: string, entry: RawMessage | OversizedAnswer): void {
    this.#answers.delete(key);
    this.#answers.set(key, entry);
    if (this.#answers.size > MAX_KEPT) {
      const oldest = this.#answers.keys().next().value;
      if (oldest !== undefined) this.#answers.delete(oldest);
    }
  }
}

/**
 * The error the SDK gets instead of an answer past --max-message-bytes: the request it waits for ends
 * with a reason, and nothing past the bound is held.
 */
export function oversizedAnswerText(id: JsonRpcId | undefined, totalBytes: number, max: number): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id: id ?? null,
    error: {
      code: -32603,
      message: `mcp-edge audit: the answer is at least ${totalBytes} bytes, over --max-message-bytes ${max}; not measured`,
    },
  });
}

/** Reads the id of a message fed in pieces, holding none of them. */
export class StreamedId {
  readonly #scanner = new EnvelopeHeadScanner();
  total = 0;

  push(piece: Uint8Array): void {
    this.#scanner.push(piece);
    this.total += piece.length;
  }

  get id(): JsonRpcId | undefined {
    return this.#scanner.snapshot().id;
  }
}
