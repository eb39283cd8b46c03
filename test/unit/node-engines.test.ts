// The Node lines package.json promises (engines) against what every locked dependency declares: `npm ci`
// on Node 20 warns (EBADENGINE) for a package whose engines exclude it. The only ones allowed are the
// MCP Inspector and its own dependencies, a development tool the README names as Node 22+.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readText } from '../deploy/repo-files.js';
import { REPO_ROOT } from '../support/processes.js';

// semver is the range reader npm itself uses for engines; it ships no types of its own.
const semver = createRequire(import.meta.url)('semver') as {
  satisfies(version: string, range: string): boolean;
  minVersion(range: string): { version: string } | null;
};

interface LockedPackage {
  version?: string;
  dev?: boolean;
  engines?: { node?: string };
}

const lock = JSON.parse(readText(join(REPO_ROOT, 'package-lock.json'))) as {
  packages: Record<string, LockedPackage>;
};
const pkg = JSON.parse(readText(join(REPO_ROOT, 'package.json'))) as { engines: { node: string } };
/** The newest Node 20 release when this was written; any 20.x that npm accepts reads the same ranges. */
const NODE_20 = '20.20.2';
const INSPECTOR = 'node_modules/@modelcontextprotocol/inspector';

/** The lockfile's paths (node_modules/...) of the packages whose engines exclude Node 20. */
function excludingNode20(): string[] {
  return Object.entries(lock.packages)
    .filter(([path, locked]) => path !== '' && !semver.satisfies(NODE_20, locked.engines?.node ?? '*'))
    .map(([path]) => path);
}

describe('Node 20 and the locked dependencies', () => {
  it('package.json promises Node 20 and later', () => {
    expect(semver.minVersion(pkg.engines.node)?.version).toBe('20.0.0');
  });

  it('every locked package supports Node 20 but the MCP Inspector (development only) and its own dependencies', () => {
    const excluded = excludingNode20();
    expect(excluded.filter((path) => !path.startsWith(INSPECTOR))).toEqual([]);
    expect(excluded.filter((path) => lock.packages[path]?.dev !== true)).toEqual([]);
  });

  it('the README names what Node 20 lacks: the Inspector', () => {
    expect(excludingNode20().length).toBeGreaterThan(0);
    expect(readText(join(REPO_ROOT, 'README.md'))).toMatch(
      /EBADENGINE[^\n]*\n?[^\n]*@modelcontextprotocol\/inspector/,
    );
  });
});
