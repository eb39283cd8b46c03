// Invariants of the source's shape that a reviewer would otherwise check by hand (docs/architecture.md):
// the edge answers for itself and sets an exchange's outcome in one place, and an upstream kind needs
// nothing of the shell.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
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

describe('one place for each decision', () => {
  it("an exchange's outcome is set in src/proxy/local-reply.ts only", () => {
    expect(filesMatching(/\.outcome\s*(=|\?\?=)[^=]/)).toEqual(['src/proxy/local-reply.ts']);
  });

  it('an answer of the edge is written by respondLocally, or by ClientResponse.fail for a failed exchange', () => {
    expect(filesMatching(/\.sendAnswer\(/)).toEqual([
      'src/proxy/client-response.ts',
      'src/proxy/local-reply.ts',
    ]);
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
