// What an inspector decided about the bytes it was given (the relay's verdict): one result type for JSON
// bodies and SSE streams, so both relays apply it the same way.
import type { JsonRpcErrorMessage } from '../core/refusals/answers.js';

export type RelayAction =
  /** Nothing for the client yet: a message is not complete (held within its ceiling). */
  | 'hold'
  /** toClient is the upstream's bytes as they came. */
  | 'forward'
  /** toClient holds the edge's own bytes in place of a message (with the upstream's around it, if any). */
  | 'replace'
  /** The rest of the upstream's body can never be delivered: send toClient, then stop reading and end. */
  | 'drop';

export interface RelayVerdict {
  action: RelayAction;
  /** Bytes for the client, in order. */
  toClient: (Uint8Array | string)[];
  /** JSON-RPC errors the upstream must receive (answers to server requests that were dropped). */
  toUpstream: JsonRpcErrorMessage[];
}

/** A verdict to fill in: 'hold' until bytes are added. */
export function heldVerdict(): RelayVerdict {
  return { action: 'hold', toClient: [], toUpstream: [] };
}

/** Adds bytes for the client; an edge's own piece makes the result a replacement. */
export function addToClient(out: RelayVerdict, piece: Uint8Array | string, own: boolean): void {
  out.toClient.push(piece);
  if (own) {
    if (out.action !== 'drop') out.action = 'replace';
  } else if (out.action === 'hold') out.action = 'forward';
}
