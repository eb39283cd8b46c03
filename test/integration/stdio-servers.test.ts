// Real third-party stdio MCP servers from npm behind mcp-edge's stdio upstream, with real SDK clients (v1
// and v2): the filesystem server (a directory listed, a file read, an oversized read refused), the memory
// server (entities created and read, one child per session), and server-everything in stdio mode
// (progress, sampling and elicitation round trips, structured content).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProtocolError } from '@modelcontextprotocol/client';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { connectV1Client, connectV2Client, textOf } from '../support/clients.js';
import { trackHandles } from '../support/handles.js';
import { STDIO_SERVERS, startStdioEdge } from '../support/stdio-edge.js';

const { track } = trackHandles();

describe('stdio upstream: @modelcontextprotocol/server-filesystem', () => {
  it('lists a directory and reads a small file; an oversized read is refused with the contract error (v1 client)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-fs-'));
    writeFileSync(join(dir, 'small.txt'), 'hello from a file\n');
    writeFileSync(join(dir, 'big.txt'), 'y'.repeat(300 * 1024));
    const edge = track(
      await startStdioEdge(STDIO_SERVERS.filesystem(dir), {
        yaml: 'limits: { response: { maxMessageBytes: 64KiB } }',
      }),
    );
    const { client } = track(await connectV1Client(edge.url));
    const listing = await client.callTool({ name: 'list_directory', arguments: { path: dir } });
    expect(textOf(listing)).toContain('[FILE] small.txt');
    expect(textOf(listing)).toContain('[FILE] big.txt');
    const small = await client.callTool({
      name: 'read_text_file',
      arguments: { path: join(dir, 'small.txt') },
    });
    expect(textOf(small)).toBe('hello from a file\n');

    const refused = await client
      .callTool({ name: 'read_text_file', arguments: { path: join(dir, 'big.txt') } })
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(McpError);
    const error = refused as McpError;
    expect(error.code).toBe(-32603);
    expect(error.data).toMatchObject({
      reason: 'limit_exceeded',
      direction: 'response',
      limit: 'response.maxMessageBytes',
      limitBytes: 64 * 1024,
      tenant: 'default',
      method: 'tools/call',
      tool: 'read_text_file',
      enforcedBy: 'mcp-edge',
    });
    expect((error.data as { observedBytes: number }).observedBytes).toBeGreaterThan(64 * 1024);
    // The refusal, as the client saw it (quoted in the closing note).
    process.stdout.write(
      `filesystem oversized read refused: ${JSON.stringify({ code: error.code, message: error.message, data: error.data })}\n`,
    );

    // The session keeps working after the refusal.
    const again = await client.callTool({
      name: 'read_text_file',
      arguments: { path: join(dir, 'small.txt') },
    });
    expect(textOf(again)).toBe('hello from a file\n');
  });

  it('serves a v2 client (protocol negotiation falls back to a session with this 2025-era server)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-fs-'));
    writeFileSync(join(dir, 'note.md'), '# note\n');
    const edge = track(await startStdioEdge(STDIO_SERVERS.filesystem(dir)));
    const connected = track(await connectV2Client(edge.url));
    const read = await connected.client.callTool({
      name: 'read_text_file',
      arguments: { path: join(dir, 'note.md') },
    });
    expect(textOf(read)).toBe('# note\n');
    expect(connected.protocolVersion()).not.toBe('2026-07-28');
  });
});

describe('stdio upstream: @modelcontextprotocol/server-memory', () => {
  it('creates entities and reads them back (v1 and v2 clients, each on its own child)', async () => {
    const memoryDir = mkdtempSync(join(tmpdir(), 'mcp-edge-memory-'));
    const edge = track(
      await startStdioEdge(STDIO_SERVERS.memory, {
        // The server keeps its graph in this file; only the listed environment reaches the child.
        stdioYaml: `    env: { MEMORY_FILE_PATH: ${JSON.stringify(join(memoryDir, 'memory.jsonl'))} }`,
      }),
    );
    const a = track(await connectV1Client(edge.url, { name: 'client-a' }));
    const created = await a.client.callTool({
      name: 'create_entities',
      arguments: { entities: [{ name: 'alpha', entityType: 'letter', observations: ['first'] }] },
    });
    expect(textOf(created)).toContain('alpha');
    const b = track(await connectV2Client(edge.url, { name: 'client-b' }));
    const read = await b.client.callTool({ name: 'open_nodes', arguments: { names: ['alpha'] } });
    expect(textOf(read)).toContain('first');
    const graph = await a.client.callTool({ name: 'read_graph', arguments: {} });
    expect(textOf(graph)).toContain('alpha');
    expect(a.sessionId()).toBeDefined();
  });
});

describe('stdio upstream: server-everything in stdio mode', () => {
  it('carries progress, sampling and elicitation round trips and structured content (v1 client)', async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.everything, { metrics: true }));
    const { client } = track(
      await connectV1Client(edge.url, { clientOptions: { capabilities: { sampling: {}, elicitation: {} } } }),
    );
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({
      role: 'assistant',
      content: { type: 'text', text: 'sampled by the test client' },
      model: 'test-model',
    }));
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));

    const progress: number[] = [];
    const long = await client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 3 } },
      undefined,
      { onprogress: (p) => progress.push(p.progress) },
    );
    expect(progress).toEqual([1, 2, 3]);
    expect(textOf(long)).toContain('Long running operation completed');

    const sampled = await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hi' } });
    expect(textOf(sampled)).toContain('sampled by the test client');

    const elicited = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
    expect(textOf(elicited)).toMatch(/decline/i);

    const structured = await client.callTool({
      name: 'get-structured-content',
      arguments: { location: 'New York' },
    });
    expect(structured.structuredContent).toMatchObject({ temperature: expect.any(Number) });

    // Metrics name the upstream by its program, never by its arguments.
    const metrics = await (await fetch(edge.metricsUrl!)).text();
    expect(metrics).toContain('upstream="stdio:node"');
    expect(metrics).not.toContain('server-everything');
  });

  it('answers a v2 client, whose oversized echo is refused as a ProtocolError with the contract data', async () => {
    const edge = track(
      await startStdioEdge(STDIO_SERVERS.everything, {
        yaml: 'limits: { response: { maxMessageBytes: 8KiB } }',
      }),
    );
    const { client } = track(await connectV2Client(edge.url));
    const small = await client.callTool({ name: 'echo', arguments: { message: 'small' } });
    expect(textOf(small)).toBe('Echo: small');
    const refused = await client
      .callTool({ name: 'echo', arguments: { message: 'z'.repeat(16 * 1024) } })
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ProtocolError);
    expect((refused as ProtocolError).data).toMatchObject({
      limit: 'response.maxMessageBytes',
      tool: 'echo',
    });
  });
});
