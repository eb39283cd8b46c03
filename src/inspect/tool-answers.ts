// Facts about tools read from messages: which host sent a request, whether a tools/call answer is an error,
// and how heavy each tool's descriptor in a tools/list page is. Plain functions over parsed values.
import { isRecord } from '../core/bytes.js';
import type { MessageKind } from '../core/types.js';
import { clientIdentityOf } from '../hosts/host-table.js';
import type { JudgeContext } from './message-verdict.js';

/**
 * The host label of a request: its own `_meta["io.modelcontextprotocol/clientInfo"]` (protocol 2026-07-28
 * has no initialize), an initialize's clientInfo (noted for the session), else the exchange's host.
 */
export function hostOfRequest(
  ctx: Pick<JudgeContext, 'hosts' | 'host' | 'noteHost'>,
  value: () => unknown,
  method: string | undefined,
): string | undefined {
  if (ctx.hosts === undefined) return undefined;
  const identity = clientIdentityOf(value(), method);
  if (identity === undefined) return ctx.host;
  const host = ctx.hosts.hosts.hostOf(identity.name);
  if (method === 'initialize') ctx.noteHost?.(host);
  return host;
}

export type ToolAnswerError = 'is_error' | 'jsonrpc_error';

/** Whether an answer to tools/call is an error: a JSON-RPC error, or a result with `isError: true`. */
export function toolAnswerError(kind: MessageKind, value: unknown): ToolAnswerError | undefined {
  if (kind === 'error') return 'jsonrpc_error';
  if (kind !== 'result' || !isRecord(value) || !isRecord(value.result)) return undefined;
  return value.result.isError === true ? 'is_error' : undefined;
}

export interface ToolDescriptorWeight {
  name: string;
  /** UTF-8 bytes of the descriptor as compact JSON (name, title, description, schemas, annotations, _meta). */
  bytes: number;
}

/** Each named tool of a tools/list page and the bytes of its descriptor. */
export function describedTools(value: unknown): ToolDescriptorWeight[] {
  const result = isRecord(value) ? value.result : undefined;
  const tools = isRecord(result) ? result.tools : undefined;
  if (!Array.isArray(tools)) return [];
  const weights: ToolDescriptorWeight[] = [];
  for (const tool of tools) {
    if (!isRecord(tool) || typeof tool.name !== 'string') continue;
    weights.push({ name: tool.name, bytes: Buffer.byteLength(JSON.stringify(tool), 'utf8') });
  }
  return weights;
}
