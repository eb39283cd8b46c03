// Real MCP clients: SDK v1 (negotiates 2025-11-25) and SDK v2 (negotiates 2026-07-28 where it can).
import {
  Client as V2Client,
  type ClientOptions as V2ClientOptions,
  StreamableHTTPClientTransport as V2Transport,
  type VersionNegotiationMode,
} from '@modelcontextprotocol/client';
import {
  Client as V1Client,
  type ClientOptions as V1ClientOptions,
} from '@modelcontextprotocol/sdk/client/index.js';
import {
  type StreamableHTTPReconnectionOptions,
  StreamableHTTPClientTransport as V1Transport,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export interface V1ClientOptionsForTests {
  /** Extra headers on every request (e.g. `{ 'x-tenant-id': 'acme' }`). */
  headers?: Record<string, string>;
  /** A fetch to use instead of the global one (to observe or alter exchanges). */
  fetch?: typeof fetch;
  /** Client-side SSE reconnection (the SDK default retries up to 2 times from 1 s). */
  reconnectionOptions?: StreamableHTTPReconnectionOptions;
  /** Passed to the SDK Client constructor (capabilities, etc.). */
  clientOptions?: V1ClientOptions;
  /** clientInfo.name (hosts are told apart by it). */
  name?: string;
  /** Runs before connect: handlers for what the server may send at once (roots/list, list_changed). */
  beforeConnect?: (client: V1Client) => void;
}

export interface ConnectedV1Client {
  client: V1Client;
  transport: V1Transport;
  /** The session id the server assigned (undefined for stateless servers). */
  sessionId(): string | undefined;
  close(): Promise<void>;
}

/** An SDK v1 Client connected (initialize done) over StreamableHTTPClientTransport. */
export async function connectV1Client(
  url: string,
  opts: V1ClientOptionsForTests = {},
): Promise<ConnectedV1Client> {
  const transport = new V1Transport(new URL(url), {
    ...(opts.headers === undefined ? {} : { requestInit: { headers: opts.headers } }),
    ...(opts.fetch === undefined ? {} : { fetch: opts.fetch }),
    ...(opts.reconnectionOptions === undefined ? {} : { reconnectionOptions: opts.reconnectionOptions }),
  });
  const client = new V1Client(
    { name: opts.name ?? 'mcp-edge-tests-v1', version: '1.32.2' },
    opts.clientOptions,
  );
  opts.beforeConnect?.(client);
  await client.connect(transport);
  return {
    client,
    transport,
    sessionId: () => transport.sessionId,
    close: () => closeQuietly(client),
  };
}

export interface V2ClientOptionsForTests {
  /** `auto` (default here) probes with server/discover and falls back to 2025 `initialize`; `legacy` skips the probe. */
  mode?: VersionNegotiationMode;
  headers?: Record<string, string>;
  fetch?: typeof fetch;
  clientOptions?: V2ClientOptions;
  name?: string;
}

export interface ConnectedV2Client {
  client: V2Client;
  transport: V2Transport;
  /** The protocol revision the connection negotiated, e.g. `2026-07-28`. */
  protocolVersion(): string | undefined;
  close(): Promise<void>;
}

/** An SDK v2 Client connected over its StreamableHTTPClientTransport, negotiating the newest revision. */
export async function connectV2Client(
  url: string,
  opts: V2ClientOptionsForTests = {},
): Promise<ConnectedV2Client> {
  const transport = new V2Transport(new URL(url), {
    ...(opts.headers === undefined ? {} : { requestInit: { headers: opts.headers } }),
    ...(opts.fetch === undefined ? {} : { fetch: opts.fetch }),
  });
  const client = new V2Client(
    { name: opts.name ?? 'mcp-edge-tests-v2', version: '2.4.0' },
    { ...opts.clientOptions, versionNegotiation: { mode: opts.mode ?? 'auto' } },
  );
  await client.connect(transport);
  return {
    client,
    transport,
    protocolVersion: () => client.getNegotiatedProtocolVersion(),
    close: () => closeQuietly(client),
  };
}

/** Closing a client whose server is already gone must not fail a test's cleanup. */
async function closeQuietly(client: { close(): Promise<void> }): Promise<void> {
  try {
    await client.close();
  } catch {
    // The peer may be gone already; nothing left to release.
  }
}

/** The text of a tool result's content blocks, joined (a block without text counts as empty). */
export function textOf(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content.map((block) => block.text ?? '').join('');
}
