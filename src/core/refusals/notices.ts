// The in-band notice a client gets for a notification or server request the edge dropped on its way to it:
// a log message (notifications/message) whose data is the refusal's error data from the table.
import type { AmbiguousKey } from '../key-names.js';
import type { LimitViolation } from '../types.js';
import { errorData } from './answers.js';
import { ambiguityWords, limitMessage } from './wording.js';

function notice(message: string, data: Record<string, unknown>): object {
  return {
    jsonrpc: '2.0',
    method: 'notifications/message',
    params: { level: 'warning', logger: 'mcp-edge', data: { message, ...data } },
  };
}

/** A notification or server request towards the client, dropped for its size. */
export function droppedMessageNotice(v: LimitViolation, droppedKind: 'notification' | 'request'): object {
  return notice(
    `mcp-edge dropped a ${droppedKind}${v.method ? ` (${v.method})` : ''} on its way to the client. ${limitMessage(v)}`,
    errorData('answer_over_ceiling', { violation: v }),
  );
}

/** A notification or server request with an ambiguous key, dropped on its way. */
export function ambiguousMessageNotice(
  a: AmbiguousKey,
  droppedKind: 'notification' | 'request',
  method: string | undefined,
): object {
  const what = `${droppedKind}${method !== undefined ? ` (${method})` : ''}`;
  return notice(
    `mcp-edge dropped a ${what} on its way to the client: it ${ambiguityWords(a, 'a client')}`,
    errorData('ambiguous_answer', { ambiguous: a }),
  );
}
