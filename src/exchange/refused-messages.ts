// What becomes of an exchange whose filters refused some of its request's messages (each message's verdict,
// FilterChain.requestMessages). Refused in every message, the edge answers it whole: one message with its
// refusal, a batch with every refusal. Refused in part, the others go upstream as the client wrote each (a
// batch of their bytes) and the refused ones wait for nothing: the client gets the edge's answer to each, for
// its own id, with the upstream's answer to the others (the relays).
import { idKey } from '../core/client-names.js';
import type { EdgeHttpError } from '../core/refusals/answers.js';
import { bodyRouting } from '../inspect/body-routing.js';
import type { Exchange } from './exchange.js';

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

/**
 * The answer to an exchange the filters refused whole, or undefined when some of its messages go on: the
 * exchange then carries what goes upstream (its messages, their bytes, their routing, the requests that
 * wait) and the answers the edge owes the client for the refused ones.
 */
export function refuseMessages(
  exchange: Exchange,
  verdicts: readonly (EdgeHttpError | undefined)[],
): EdgeHttpError | undefined {
  const judged = exchange.request;
  if (judged === undefined) return undefined;
  const refused: EdgeHttpError[] = [];
  const onward: number[] = [];
  judged.messages.forEach((_, i) => {
    const verdict = verdicts[i];
    if (verdict === undefined) onward.push(i);
    else refused.push(verdict);
  });
  if (refused.length === 0) return undefined;
  if (onward.length === 0) return judged.batch ? batchAnswer(refused) : refused[0];
  const read = onward.map((i) => judged.read[i]!);
  // A refused request is answered by the edge: no answer of the upstream's is waited for (unless a request that
  // goes on carries the same id).
  const going = new Set(onward.map((i) => requestKey(judged.messages[i]!)));
  judged.messages.forEach((message, i) => {
    const key = requestKey(message);
    if (verdicts[i] !== undefined && key !== undefined && !going.has(key) && message.id !== undefined)
      exchange.pending.take(message.id);
  });
  exchange.request = { messages: onward.map((i) => judged.messages[i]!), batch: true, read };
  exchange.bodyRouting = bodyRouting(read);
  const pieces: Uint8Array[] = [OPEN];
  for (const message of read) {
    if (pieces.length > 1) pieces.push(COMMA);
    pieces.push(message.bytes);
  }
  pieces.push(CLOSE);
  exchange.forwardedBody = Buffer.concat(pieces);
  exchange.localAnswers = refused;
  return undefined;
}

/** The key a request waits under, or undefined for any other message. */
function requestKey(message: { kind: string; id: string | number | null | undefined }): string | undefined {
  return message.kind === 'request' && message.id !== undefined ? idKey(message.id) : undefined;
}

/**
 * Several answers of the edge's own as one: their messages in one JSON array, with the first's status,
 * headers and outcome (a batch refused in every message; the refused messages of a batch whose others the
 * upstream accepted without an answer).
 */
export function batchAnswer(answers: readonly EdgeHttpError[], status?: number): EdgeHttpError {
  const first = answers[0]!;
  return {
    status: status ?? first.status,
    headers: first.headers,
    body: `[${answers.map((answer) => answer.body).join(',')}]`,
    outcome: first.outcome,
  };
}
