// What a stdio server sends its client before the client has opened its GET stream. An SDK client opens
// that stream only once notifications/initialized is answered (202), while server-filesystem asks for the
// client's roots as soon as it reads that notification: the request waits for the stream (bounded by
// upstream.stdio.streamWait and streamWaitBytes) and is delivered when it opens. The race is made
// deterministic by holding the client's GET until the edge has the server's request in hand.
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  ListRootsRequestSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { connectV1Client, textOf } from '../support/clients.js';
import { initializeRaw, trackHandles } from '../support/handles.js';
import { waitFor } from '../support/processes.js';
import {
  STDIO_SERVERS,
  type StdioTestEdge,
  startStdioEdge,
  undeliveredCount,
} from '../support/stdio-edge.js';

const { track } = trackHandles();

/** The server's stderr lines of one session (or all), as the edge logged them. */
function stderrOf(edge: StdioTestEdge, session?: string): string[] {
  return edge.logs.flatMap((record) =>
    typeof record.stderr === 'string' && (session === undefined || record.session === session)
      ? [record.stderr]
      : [],
  );
}

/** A fetch that holds the client's GET until `release()`: the stream opens exactly when the test says. */
function gatedGetFetch(): { fetch: typeof fetch; release(): void } {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  return {
    release,
    fetch: async (input, init) => {
      if (init?.method === 'GET') await gate;
      return fetch(input, init);
    },
  };
}

function tempDir(prefix: string): string {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

const ROOTS_SETTLED = /^(Updated allowed directories from MCP roots|Failed to request initial roots)/;

describe('stdio upstream: messages sent before the client opens its GET stream', () => {
  it("server-filesystem serves the client's root: its roots/list waits for the client's GET stream", async () => {
    const serverDir = tempDir('mcp-edge-cli-dir-');
    const clientRoot = tempDir('mcp-edge-client-root-');
    writeFileSync(join(clientRoot, 'client-root.txt'), 'the client root\n');
    const edge = track(await startStdioEdge(STDIO_SERVERS.filesystem(serverDir), { logLevel: 'debug' }));
    const withRoots = {
      clientOptions: { capabilities: { roots: { listChanged: true } } },
      beforeConnect: (client: import('@modelcontextprotocol/sdk/client/index.js').Client) =>
        client.setRequestHandler(ListRootsRequestSchema, () => ({
          roots: [{ uri: pathToFileURL(clientRoot).href, name: 'client root' }],
        })),
    };

    // Held until the edge has the server's roots/list: the case where no stream exists yet, every time.
    const gated = gatedGetFetch();
    const held = track(await connectV1Client(edge.url, { ...withRoots, fetch: gated.fetch }));
    expect(await waitFor(() => edge.logs.some((record) => record.message === 'roots/list'))).toBe(true);
    gated.release();
    const session = held.sessionId()!;
    expect(await waitFor(() => stderrOf(edge, session).some((line) => ROOTS_SETTLED.test(line)))).toBe(true);
    const listed = textOf(await held.client.callTool({ name: 'list_allowed_directories', arguments: {} }));
    expect(listed).toContain(clientRoot);
    expect(listed).not.toContain(serverDir);

    // And as the race runs by itself, in several sessions at once.
    const sessions = await Promise.all(
      Array.from({ length: 3 }, async () => track(await connectV1Client(edge.url, withRoots))),
    );
    for (const connected of sessions) {
      const id = connected.sessionId()!;
      expect(await waitFor(() => stderrOf(edge, id).some((line) => ROOTS_SETTLED.test(line)))).toBe(true);
      const dirs = textOf(
        await connected.client.callTool({ name: 'list_allowed_directories', arguments: {} }),
      );
      expect(dirs).toContain(clientRoot);
    }
  });

  it('a request and a list_changed sent on notifications/initialized reach the client once its stream opens', async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.scripted, { logLevel: 'debug' }));
    const gated = gatedGetFetch();
    let listChanged = 0;
    const connected = track(
      await connectV1Client(edge.url, {
        fetch: gated.fetch,
        clientOptions: { capabilities: { roots: {} } },
        beforeConnect: (client) => {
          client.setRequestHandler(ListRootsRequestSchema, () => ({
            roots: [{ uri: 'file:///the-client-root', name: 'client root' }],
          }));
          client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
            listChanged++;
          });
        },
      }),
    );
    expect(
      await waitFor(() => edge.logs.some((record) => record.message === 'notifications/tools/list_changed')),
    ).toBe(true);
    gated.release();
    expect(await waitFor(() => stderrOf(edge).some((line) => line.startsWith('roots')))).toBe(true);
    expect(textOf(await connected.client.callTool({ name: 'roots', arguments: {} }))).toBe(
      JSON.stringify([{ uri: 'file:///the-client-root', name: 'client root' }]),
    );
    expect(listChanged).toBe(1);
  });

  it('past upstream.stdio.streamWait or streamWaitBytes, the server request is answered with an error and counted', async () => {
    for (const stdioYaml of ['    streamWait: 200ms', '    streamWaitBytes: 16B']) {
      const edge = track(await startStdioEdge(STDIO_SERVERS.scripted, { stdioYaml, metrics: true }));
      // A client that never opens a GET stream.
      await initializeRaw(edge.url);
      expect(await waitFor(() => stderrOf(edge).some((line) => line.startsWith('roots')))).toBe(true);
      expect(stderrOf(edge).find((line) => line.startsWith('roots'))).toBe(
        'roots error: mcp-edge: no client can take this request: no client stream opened to carry it within upstream.stdio.streamWait (or it was past streamWaitBytes)',
      );
      expect(await waitFor(() => edge.logs.filter((r) => r.reason === 'no_stream').length === 2)).toBe(true);
      expect(await undeliveredCount(edge, 'no_stream')).toBe(2);
    }
  });
});
