// Invariants of the source's shape that a reviewer would otherwise check by hand (docs/architecture.md):
// the edge answers for itself and sets an exchange's outcome in one place, its refusals are worded, given a
// status and an outcome by one table, and an upstream kind needs nothing of the shell.
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { filesUnder, repoPath } from '../deploy/repo-files.js';

const SOURCES = filesUnder(repoPath('src'), ['.ts']).map((path) => ({
  path: relative(repoPath(), path),
  text: readFileSync(path, 'utf8'),
}));

/** The source files where `pattern` occurs (comments included: a commented-out write is a write to remove). */
function filesMatching(pattern: RegExp): string[] {
  return SOURCES.filter((file) => pattern.test(file.text)).map((file) => file.path);
}

/** The refusals table and its builders: the one place an edge answer is worded and given a status. */
const REFUSALS = 'src/core/refusals/';
/** Code that sends no answer of the edge's: audit is a client of MCP servers, demo an MCP server of its own. */
const NOT_THE_EDGE = ['src/audit/', 'src/demo/'];

/** The edge's files outside the refusals table where `pattern` occurs. */
function edgeFilesMatching(pattern: RegExp): string[] {
  return filesMatching(pattern).filter(
    (path) => !path.startsWith(REFUSALS) && !NOT_THE_EDGE.some((dir) => path.startsWith(dir)),
  );
}

/** What an error body of the edge's own carries: its enforcedBy, or a JSON-RPC error code chosen there. */
const ERROR_BODY = /enforcedBy|-32\d{3}\b|\berror:\s*\{\s*code\b/;
/** An HTTP status written where an answer is made (an answer's field, Fastify's reply, node's response). */
const STATUS =
  /\bstatus:\s*[1-5]\d\d\b|\.code\(\s*[1-5]\d\d\b|writeHead\(\s*[1-5]\d\d\b|statusCode\s*=\s*[1-5]\d\d\b/;
/** An outcome value written into an answer or an exchange. */
const OUTCOME = /\boutcome\s*(:|=(?!=))\s*'/;

/** Each source file's imports of other source files (relative specifiers, `.js` read as `.ts`). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of SOURCES) {
    const targets = [...file.text.matchAll(/from '(\.{1,2}\/[^']+)\.js'/g)].map((m) =>
      join(dirname(file.path), `${m[1]}.ts`),
    );
    graph.set(file.path, targets);
  }
  return graph;
}

/** The import cycles of the graph, each as the files around it (empty: none). */
function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push(path.slice(path.indexOf(next)));
      else if (state.get(next) === undefined && graph.has(next)) visit(next);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (state.get(file) === undefined) visit(file);
  return found;
}

describe('one place for each decision', () => {
  it('src has no import cycle', () => {
    const graph = importGraph();
    expect([...graph.values()].flat().length).toBeGreaterThan(200);
    expect(cycles(graph)).toEqual([]);
  });

  it("an exchange's outcome is set in src/proxy/local-reply.ts only", () => {
    expect(filesMatching(/\.outcome\s*(=|\?\?=)[^=]/)).toEqual(['src/proxy/local-reply.ts']);
  });

  it('an answer of the edge is written by respondLocally only, the 500 of a failed exchange included', () => {
    expect(filesMatching(/\.sendAnswer\(/)).toEqual([
      'src/proxy/client-response.ts',
      'src/proxy/local-reply.ts',
    ]);
    // client-response.ts defines sendAnswer and calls it once: in the writer its fail hands to respondLocally.
    const clientResponse = SOURCES.find((file) => file.path === 'src/proxy/client-response.ts')?.text ?? '';
    expect(clientResponse.match(/\.sendAnswer\(/g)).toHaveLength(1);
    expect(clientResponse).toContain('sendAnswer: (answer) => this.sendAnswer(answer)');
    // Nothing else builds a response from an EdgeHttpError's parts.
    expect(filesMatching(/\.code\(answer\.status\)|\.code\(refusal\.status\)/)).toEqual([
      'src/proxy/local-reply.ts',
    ]);
  });

  it('every error the edge sends is worded by the refusals table: no other file writes an error body', () => {
    expect(edgeFilesMatching(ERROR_BODY)).toEqual([]);
    // The rows' shape and codes are the table's own; call sites use the builders (answers.ts).
    expect(edgeFilesMatching(/refusals\/rows\.js'/)).toEqual([]);
    // The 404 of a path that is not the MCP endpoint, worded once.
    expect(filesMatching(/Not found: mcp-edge/)).toEqual(['src/core/refusals/table.ts']);
  });

  it("an edge answer's status and outcome are chosen by the refusals table only", () => {
    // The metrics port answers its own scrapes (text, not JSON-RPC). A tenant resolver's decision says 401,
    // and admission answers it with the table's `unauthenticated`.
    expect(edgeFilesMatching(STATUS)).toEqual([
      'src/metrics/metrics-server.ts',
      'src/tenancy/tenant-resolver.ts',
    ]);
    expect(filesMatching(STATUS).filter((path) => path.startsWith(REFUSALS))).toEqual([
      'src/core/refusals/table.ts',
    ]);
    // local-reply.ts sets an outcome only from a row of the table (an answer, or endedByEdge's ending);
    // exchange-end.ts says what became of an answer the upstream gave (forwarded, replaced, client gone).
    expect(filesMatching(OUTCOME)).toEqual(['src/core/refusals/table.ts']);
  });

  it('would catch a refusal worded, given a status or an outcome the way main did before the table', () => {
    // stdio-call.ts built its child's answer itself; nine files passed edgeRefusal a status and words;
    // errors.ts fixed each answer's outcome beside it. Each form is found by these patterns.
    const sites = [
      "error: { code: -32603, message: `mcp-edge: no client can take this request`, data: { reason, enforcedBy: 'mcp-edge' } }",
      "return { status: 503, headers: { ...JSON_HEADERS }, body: JSON.stringify(body), outcome: 'upstream_capacity' };",
      'reply.code(404).send({ error: { code: -32600, message: `Not found` } })',
    ];
    expect(sites.map((site) => [ERROR_BODY.test(site), STATUS.test(site) || OUTCOME.test(site)])).toEqual([
      [true, false],
      [false, true],
      [true, true],
    ]);
  });

  it('src/upstream imports nothing from src/proxy', () => {
    const upstreamFiles = SOURCES.filter((file) => file.path.startsWith('src/upstream/'));
    expect(upstreamFiles.length).toBeGreaterThan(0);
    expect(upstreamFiles.filter((file) => /from '\.\.\/proxy\//.test(file.text)).map((f) => f.path)).toEqual(
      [],
    );
  });
});
