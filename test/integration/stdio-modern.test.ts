// Protocol 2026-07-28 clients (no initialize, no session) through the stdio upstream: their requests go to
// one child per tenant, where ids that two clients have in flight at once wait their turn (no id is ever
// rewritten). The v2 SDK client against a v2 SDK stdio server negotiates 2026-07-28; against a v1 one
// it falls back to a 2025 session with a child of its own.
import { describe, expect, it } from 'vitest';
import { connectV2Client, textOf } from '../support/clients.js';
import { trackHandles } from '../support/handles.js';
import { STDIO_SERVERS, startStdioEdge } from '../support/stdio-edge.js';

const { track } = trackHandles();

const TENANCY = [
  'tenancy:',
  '  resolve:',
  '    - header: x-tenant-id',
  '      trustedProxies: [127.0.0.0/8]',
  'tenants:',
  '  acme: {}',
].join('\n');

describe('stdio upstream: protocol 2026-07-28 clients', () => {
  it('a v2 client and a v2 stdio server speak 2026-07-28; concurrent clients share the tenant child and get their own answers', async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.v2Fixture, { yaml: TENANCY }));
    const a = track(await connectV2Client(edge.url, { name: 'a' }));
    const b = track(await connectV2Client(edge.url, { name: 'b' }));
    expect(a.protocolVersion()).toBe('2026-07-28');
    expect(b.protocolVersion()).toBe('2026-07-28');
    // Both clients number their requests alike: their ids collide on the shared child, and are never rewritten.
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 === 0 ? a : b).client.callTool({ name: 'slow_echo', arguments: { text: `t${i}`, ms: 100 } }),
      ),
    );
    expect(answers.map(textOf)).toEqual(['t0', 't1', 't2', 't3', 't4', 't5']);
    expect(edge.upstream.pids()).toHaveLength(1);
    const pidA = textOf(await a.client.callTool({ name: 'pid', arguments: {} }));
    expect(textOf(await b.client.callTool({ name: 'pid', arguments: {} }))).toBe(pidA);

    // Another tenant never shares that child.
    const acme = track(await connectV2Client(edge.url, { name: 'acme', headers: { 'x-tenant-id': 'acme' } }));
    expect(acme.protocolVersion()).toBe('2026-07-28');
    const pidAcme = textOf(await acme.client.callTool({ name: 'pid', arguments: {} }));
    expect(pidAcme).not.toBe(pidA);
    expect(edge.upstream.pids()).toHaveLength(2);
  });

  it('a v2 client and a v1 stdio server: the client falls back to a 2025 session, on a child of its own', async () => {
    const edge = track(await startStdioEdge(STDIO_SERVERS.v1Fixture));
    const a = track(await connectV2Client(edge.url, { name: 'a' }));
    const b = track(await connectV2Client(edge.url, { name: 'b' }));
    expect(a.protocolVersion()).not.toBe('2026-07-28');
    const [pa, pb] = await Promise.all([
      a.client.callTool({ name: 'pid', arguments: {} }),
      b.client.callTool({ name: 'pid', arguments: {} }),
    ]);
    expect(textOf(pa)).not.toBe(textOf(pb));
    expect(textOf(await a.client.callTool({ name: 'echo', arguments: { text: 'legacy' } }))).toBe('legacy');
  });
});
