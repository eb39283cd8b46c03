// The conformance server suite against the conformance fixture run over stdio behind mcp-edge's stdio
// upstream, compared with the same fixture served over HTTP directly. Every check that passes directly
// passes over stdio, and none fails. What differs is observed and pinned: the stdio upstream answers a
// lone request whose result comes first as a JSON body, where the SDK's HTTP transport opens an SSE stream
// with a priming event for resumption (SEP-1699), so the suite's SSE-only checks have nothing to look at.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compareRuns,
  EDGE_YAML_FOR_CONFORMANCE,
  formatComparison,
  runServerSuite,
  scenarioPassed,
  summarize,
} from '../../scripts/conformance.js';
import { type ConformanceServer, startConformanceServer } from '../fixtures/conformance-server.js';
import { REPO_ROOT } from '../support/processes.js';
import { type StdioTestEdge, startStdioEdge } from '../support/stdio-edge.js';

/** SSE-only checks (SEP-1699 priming event, retry field, SSE streams) that a JSON answer leaves unexercised. */
const ANSWERED_AS_JSON_OVER_STDIO = [
  {
    check: 'server-sse-priming-event',
    direct: 'WARNING',
    proxied: 'missing',
    scenario: 'server-sse-polling',
  },
  { check: 'server-sse-retry-field', direct: 'WARNING', proxied: 'missing', scenario: 'server-sse-polling' },
  {
    check: 'server-sse-streams-functional',
    direct: 'SUCCESS',
    proxied: 'missing',
    scenario: 'server-sse-multiple-streams',
  },
];

const FIXTURE_OVER_STDIO = [
  process.execPath,
  '--import',
  'tsx',
  join(REPO_ROOT, 'test/fixtures/conformance-server.ts'),
  '--stdio',
];

describe('conformance server suite: the fixture over HTTP directly vs over stdio behind mcp-edge', () => {
  // Over stdio every other scenario and check matches the direct run, server-to-client requests included.
  let fixture: ConformanceServer;
  let edge: StdioTestEdge;

  beforeAll(async () => {
    fixture = await startConformanceServer();
    edge = await startStdioEdge(FIXTURE_OVER_STDIO, { yaml: EDGE_YAML_FOR_CONFORMANCE });
  }, 60_000);

  afterAll(async () => {
    await edge?.stop();
    await fixture?.close();
  }, 60_000);

  it('passes every check it passes directly; only the SSE-only checks of a JSON answer differ', async () => {
    const direct = await runServerSuite({ url: fixture.url });
    const overStdio = await runServerSuite({ url: edge.url });
    console.log(`${formatComparison(direct.results, overStdio.results)}\n`);
    console.log(
      `direct ${JSON.stringify(summarize(direct.results))}, over stdio ${JSON.stringify(summarize(overStdio.results))}`,
    );
    expect(overStdio.results.flatMap((r) => r.checks).filter((c) => c.status === 'FAILURE')).toEqual([]);
    expect(compareRuns(direct.results, overStdio.results)).toEqual(ANSWERED_AS_JSON_OVER_STDIO);
    const passedDirectly = direct.results.filter(scenarioPassed).map((r) => r.scenario);
    expect(overStdio.results.filter(scenarioPassed).map((r) => r.scenario)).toEqual(
      passedDirectly.filter((scenario) => scenario !== 'server-sse-polling'),
    );
  }, 300_000);
});
