// More than one replica behind a load balancer: a real nginx (Debian's, on loopback) in front of two edges,
// each with its own stateful MCP server (SDK v1), as two pods behind an ingress. Hashing on a key every
// request of a session carries from its first (the client's Authorization, else its address) keeps each
// session on one edge: 20 SDK sessions all complete. Hashing on Mcp-Session-Id alone does not: the
// initialize that creates a session carries none, so it lands on either edge, and the id its server picks
// hashes to either edge too (docs/operations.md, "More than one replica").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectV1Client } from '../support/clients.js';
import { NGINX_BIN, type ProxiedRequest, type RunningNginx, startNginx } from '../support/nginx.js';
import { startV1Server, type V1Server } from '../support/sdk-v1-server.js';
import { startTestEdge, type TestEdge } from '../support/start-edge.js';

const SESSIONS = 20;

/** The form docs/operations.md shows for plain nginx. */
const BY_CLIENT = {
  http: ['map $http_authorization $mcp_affinity { "" $remote_addr; default $http_authorization; }'],
  balancing: ['hash $mcp_affinity consistent;'],
};
const BY_SESSION_ID = { balancing: ['hash $http_mcp_session_id consistent;'] };

interface Pod {
  server: V1Server;
  edge: TestEdge;
  backend: string;
}

let pods: Pod[] = [];

beforeAll(async () => {
  pods = await Promise.all(
    ['a', 'b'].map(async () => {
      const server = await startV1Server({ mode: 'stateful' });
      const edge = await startTestEdge(server.url);
      return { server, edge, backend: new URL(edge.url).host };
    }),
  );
});

afterAll(async () => {
  for (const pod of pods) {
    await pod.edge.stop();
    await pod.server.close();
  }
});

/** One client's session through the balancer: initialize, a listing, a call, and its DELETE. */
async function session(url: string, client: number): Promise<string> {
  const connected = await connectV1Client(`${url}/mcp`, {
    headers: { authorization: `Bearer client-${client}` },
    reconnectionOptions: {
      maxRetries: 0,
      initialReconnectionDelay: 1000,
      maxReconnectionDelay: 1000,
      reconnectionDelayGrowFactor: 1,
    },
  });
  try {
    const sessionId = connected.sessionId();
    if (sessionId === undefined) throw new Error('no session id');
    await connected.client.listTools();
    const echoed = await connected.client.callTool({ name: 'echo', arguments: { text: `client ${client}` } });
    expect(JSON.stringify(echoed)).toContain(`client ${client}`);
    await connected.transport.terminateSession();
    return sessionId;
  } finally {
    await connected.close();
  }
}

/** The backends each session's requests went to, from nginx's access log: its initialize's answer names it. */
function backendsBySession(requests: readonly ProxiedRequest[]): Map<string, Set<string>> {
  const bySession = new Map<string, Set<string>>();
  for (const request of requests) {
    const id = request.sessionSent || request.sessionAnswered;
    if (id === '') continue;
    const backends = bySession.get(id) ?? new Set<string>();
    backends.add(request.backend);
    bySession.set(id, backends);
  }
  return bySession;
}

async function withNginx<T>(
  form: Parameters<typeof startNginx>[0],
  run: (nginx: RunningNginx) => Promise<T>,
) {
  const nginx = await startNginx(form);
  try {
    return await run(nginx);
  } finally {
    await nginx.close();
  }
}

describe('sessions across replicas, behind a real nginx', { timeout: 120_000 }, () => {
  it(`hash on the client's key: ${SESSIONS} SDK sessions all complete, each session's requests on one edge`, async () => {
    expect(NGINX_BIN).toBeTruthy();
    await withNginx({ backends: pods.map((p) => p.backend), ...BY_CLIENT }, async (nginx) => {
      const ids = await Promise.all(Array.from({ length: SESSIONS }, (_, i) => session(nginx.url, i)));
      expect(new Set(ids).size).toBe(SESSIONS);
      const bySession = backendsBySession(await nginx.requests());
      expect([...bySession.keys()].sort()).toEqual([...ids].sort());
      for (const [id, backends] of bySession) expect([...backends], id).toHaveLength(1);
      // Both edges took sessions, and each MCP server saw only its own sessions' requests.
      const seen = pods.map(
        (pod) =>
          new Set(
            pod.server.requests.map((r) => r.headers['mcp-session-id']).filter((id) => id !== undefined),
          ),
      );
      expect(seen.every((ids) => ids.size > 0)).toBe(true);
      expect([...(seen[0] ?? [])].filter((id) => seen[1]?.has(id))).toEqual([]);
      for (const request of await nginx.requests())
        expect(request.status, JSON.stringify(request)).toBeLessThan(400);
    });
  });

  it('hash on Mcp-Session-Id alone breaks sessions: an initialize carries no session id', async () => {
    await withNginx({ backends: pods.map((p) => p.backend), ...BY_SESSION_ID }, async (nginx) => {
      const outcomes = await Promise.allSettled(
        Array.from({ length: SESSIONS }, (_, i) => session(nginx.url, i)),
      );
      const failed = outcomes.filter((outcome) => outcome.status === 'rejected');
      expect(failed.length).toBeGreaterThan(0);
      // Each broken session: created on one edge, its next request sent to the other, which knows it not.
      const split = [...backendsBySession(await nginx.requests()).values()].filter((b) => b.size > 1);
      expect(split.length).toBe(failed.length);
      const notFound = (await nginx.requests()).filter((request) => request.status === 404);
      expect(notFound.length).toBeGreaterThanOrEqual(failed.length);
    });
  });
});
