// docs/architecture.md says where each decision lives: every module it names must exist, and every name it
// places in a module ("`respondLocally` in `src/proxy/local-reply.ts`") must be defined there.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { repoPath } from './repo-files.js';

const DOC = readFileSync(repoPath('docs/architecture.md'), 'utf8');

/** Every `src/...` path the document names (files, or folders ending in a slash). */
function pathsNamed(text: string): string[] {
  return [...new Set([...text.matchAll(/`(src\/[A-Za-z0-9_./-]+)`/g)].map((m) => m[1]!))];
}

/** "`Name` in `src/...`" and "`Name` (`src/...`)": the name and the file it is said to be in. */
function namesPlaced(text: string): { name: string; path: string }[] {
  const placed = [
    ...text.matchAll(/`([A-Za-z_][A-Za-z0-9_]*)(?:\.[A-Za-z_]+)?` (?:in |\()`(src\/[^`]+\.ts)`/g),
  ];
  return placed.map((m) => ({ name: m[1]!, path: m[2]! }));
}

describe('docs/architecture.md', () => {
  it('names only modules that exist', () => {
    const named = pathsNamed(DOC);
    expect(named.length).toBeGreaterThan(30);
    expect(named.filter((path) => !existsSync(repoPath(path)))).toEqual([]);
  });

  it('places each name in the module that defines it', () => {
    const placed = namesPlaced(DOC);
    expect(placed.length).toBeGreaterThan(10);
    const definition = (name: string) =>
      new RegExp(
        `(function|class|interface|type|const|let)\\s+${name}\\b|^\\s+(readonly\\s+)?${name}[(:?]`,
        'm',
      );
    const misplaced = placed.filter(
      ({ name, path }) =>
        !existsSync(repoPath(path)) || !definition(name).test(readFileSync(repoPath(path), 'utf8')),
    );
    expect(misplaced).toEqual([]);
  });
});
