// Invariants of the source's shape that a reviewer would otherwise check by hand (docs/architecture.md):
// the edge answers for itself and sets an exchange's outcome in one place, and an upstream kind needs
// nothing of the shell.
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

  it('src/upstream imports nothing from src/proxy', () => {
    const upstreamFiles = SOURCES.filter((file) => file.path.startsWith('src/upstream/'));
    expect(upstreamFiles.length).toBeGreaterThan(0);
    expect(upstreamFiles.filter((file) => /from '\.\.\/proxy\//.test(file.text)).map((f) => f.path)).toEqual(
      [],
    );
  });
});
