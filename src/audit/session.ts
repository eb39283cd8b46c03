// One MCP client session for the audit: the SDK's Client over a tapped transport, and a request that
// returns what the server sent for it (its bytes and value), whether the SDK took it as a result or an error.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { z } from 'zod';
import { isRecord } from '../core/bytes.js';
import type { RawMessage, RawTap } from './raw-tap.js';

/** Any result: audit judges what came, the SDK does not reject it first. */
const ANY_RESULT = z.looseObject({});

export type Answer =
  | { kind: 'result'; raw: RawMessage; result: Record<string, unknown> }
  | { kind: 'error'; raw: RawMessage | undefined; code: number | undefined; message: string }
  | { kind: 'oversized'; totalBytes: number };

export interface ServerFacts {
  name: string | undefined;
  version: string | undefined;
  protocolVersion: string | undefined;
  capabilities: Record<string, unknown>;
}

export class AuditSession {
  constructor(
    readonly client: Client,
    private readonly tap: RawTap,
    private readonly transport: Transport,
    readonly server: ServerFacts,
  ) {}

  /** Sends one request and waits at most `timeoutMs` for its answer. */
  async request(
    method: string,
    params: Record<string, unknown> | undefined,
    timeoutMs: number,
  ): Promise<Answer> {
    let failure: unknown;
    try {
      await this.client.request({ method, ...(params !== undefined ? { params } : {}) }, ANY_RESULT, {
        timeout: Math.max(1, timeoutMs),
        maxTotalTimeout: Math.max(1, timeoutMs),
      });
    } catch (error) {
      failure = error;
    }
    const raw = this.tap.take(this.tap.lastRequestId);
    if (raw !== undefined && !('value' in raw)) return { kind: 'oversized', totalBytes: raw.totalBytes };
    const value = raw?.value;
    if (raw !== undefined && isRecord(value) && isRecord(value.result)) {
      return { kind: 'result', raw, result: value.result };
    }
    const error = isRecord(value) && isRecord(value.error) ? value.error : undefined;
    const code = typeof error?.code === 'number' ? error.code : (failure as { code?: unknown })?.code;
    return {
      kind: 'error',
      raw,
      code: typeof code === 'number' ? code : undefined,
      message:
        typeof error?.message === 'string'
          ? error.message
          : failure !== undefined
            ? reasonOf(failure)
            : raw === undefined
              ? 'no answer that audit could read (JSON-RPC in UTF-8) for this request'
              : 'an answer with neither a result nor an error',
    };
  }

  async close(): Promise<void> {
    await this.client.close().catch(() => {});
    await this.transport.close().catch(() => {});
  }
}

/** An error's message with its cause (fetch's "fetch failed" says little without it). */
export function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  if (!(cause instanceof Error)) return error.message;
  const code = (cause as NodeJS.ErrnoException).code;
  return `${error.message} (${code !== undefined ? `${code}: ` : ''}${cause.message})`;
}

/** Connects and initializes; throws with the reason when the server cannot be reached or initialized. */
export async function openSession(
  transport: Transport,
  tap: RawTap,
  timeoutMs: number,
): Promise<AuditSession> {
  const client = new Client({ name: 'mcp-edge-audit', version: '1' }, { capabilities: {} });
  await client.connect(transport, { timeout: timeoutMs });
  const info = client.getServerVersion();
  const raw = tap.take(tap.lastRequestId);
  const result = raw !== undefined && 'value' in raw && isRecord(raw.value) ? raw.value.result : undefined;
  const protocolVersion =
    isRecord(result) && typeof result.protocolVersion === 'string' ? result.protocolVersion : undefined;
  return new AuditSession(client, tap, transport, {
    name: info?.name,
    version: info?.version,
    protocolVersion,
    capabilities: { ...(client.getServerCapabilities() ?? {}) },
  });
}
