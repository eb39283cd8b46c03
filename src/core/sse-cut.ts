// Closing an SSE event the upstream cut off half-sent, so that the next event written stands alone.
import { CR, LF } from './bytes.js';

/**
 * The event type mcp-edge gives an event the upstream cut off half-sent: clients dispatch only `message`
 * events (both MCP SDKs, EventSource's onmessage), so a partial event closed with this type is ignored.
 */
export const CUT_EVENT_TYPE = 'mcp-edge-cut';

/**
 * Where a stream of bytes stops, judged from its last three bytes (-1 for none): true when an SSE parser
 * reading it would be between events (nothing of a next event begun), so an event written now stands alone.
 */
export function endsBetweenEvents(b1: number, b2: number, b3: number): boolean {
  // b3 is the last byte, b2 the one before it, b1 the one before that.
  if (b3 === -1) return true;
  const lineEnd = (b: number) => b === LF || b === CR;
  if (b3 === CR) return b2 === -1 || lineEnd(b2);
  if (b3 !== LF) return false;
  if (b2 === CR) return b1 === -1 || lineEnd(b1); // CRLF: blank when what precedes the CR ended a line
  return b2 === -1 || b2 === LF;
}

/**
 * What to write after bytes that stop inside an event so that the next event stands alone: end the line in
 * progress, give the partial event CUT_EVENT_TYPE, and dispatch it. Empty when the bytes stop between events.
 */
export function closingOfCutEvent(b1: number, b2: number, b3: number): string {
  if (endsBetweenEvents(b1, b2, b3)) return '';
  const inLine = b3 !== LF && b3 !== CR;
  return `${inLine ? '\n' : ''}event: ${CUT_EVENT_TYPE}\n\n`;
}
