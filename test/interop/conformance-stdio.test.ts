// The conformance server suite against the conformance fixture run over stdio behind mcp-edge's stdio
// upstream, compared with the same fixture served over HTTP directly: the same result for every scenario
// and every check. (With upstream.stdio.jsonResponse, a lone request's answer is a JSON body, and the
// suite's SSE-only checks have nothing to look at: that is pinned too.)
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

const FIXTURE_OVER_STDIO = [
  process.execPath,
  '--import',
  'tsx',
  join(REPO_ROOT, 'test/fixtures/conformance-server.ts'),
  '--stdio',
];

/** With upstream.stdio.jsonResponse: the SSE-only checks (SEP-1699 priming event, retry field) that a JSON answer leaves unexercised. */
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

describe('conformance server suite: the fixture over HTTP directly vs over stdio behind mcp-edge', () => {
  let fixture: ConformanceServer;
  let direct: Awaited<ReturnType<typeof runServerSuite>>;

  beforeAll(async () => {
    fixture = await startConformanceServer();
    direct = await runServerSuite({ url: fixture.url });
  }, 120_000);

  afterAll(async () => {
    await fixture?.close();
  }, 60_000);

  async function overStdio(stdioYaml?: string): Promise<Awaited<ReturnType<typeof runServerSuite>>> {
    const edge: StdioTestEdge = await startStdioEdge(FIXTURE_OVER_STDIO, {
      yaml: EDGE_YAML_FOR_CONFORMANCE,
      ...(stdioYaml !== undefined ? { stdioYaml } : {}),
    });
    try {
      const run = await runServerSuite({ url: edge.url });
      console.log(`${formatComparison(direct.results, run.results)}\n`);
      console.log(
        `direct ${JSON.stringify(summarize(direct.results))}, over stdio ${JSON.stringify(summarize(run.results))}`,
      );
      expect(run.results.flatMap((r) => r.checks).filter((c) => c.status === 'FAILURE')).toEqual([]);
      return run;
    } finally {
      await edge.stop();
    }
  }

  it('answers as SSE streams by default: the same result for every scenario and check as directly', async () => {
    const run = await overStdio();
    expect(compareRuns(direct.results, run.results)).toEqual([]);
    expect(run.results.filter(scenarioPassed).map((r) => r.scenario)).toEqual(
      direct.results.filter(scenarioPassed).map((r) => r.scenario),
    );
  }, 300_000);

  it('with upstream.stdio.jsonResponse: only the SSE-only checks of a JSON answer differ', async () => {
    const run = await overStdio('    jsonResponse: true');
    expect(compareRuns(direct.results, run.results)).toEqual(ANSWERED_AS_JSON_OVER_STDIO);
    expect(run.results.filter(scenarioPassed).map((r) => r.scenario)).toEqual(
      direct.results
        .filter(scenarioPassed)
        .map((r) => r.scenario)
        .filter((scenario) => scenario !== 'server-sse-polling'),
    );
  }, 300_000);
});
