// The operator docs must lead somewhere: every relative link in README.md and docs/ names a file of the
// repository, and every #anchor into a Markdown file names one of its headings.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/processes.js';
import { filesUnder, repoPath } from './repo-files.js';

const documents = [repoPath('README.md'), ...filesUnder(repoPath('docs'), ['.md'])];

/** Link targets of inline Markdown links and images, outside code spans and fenced blocks. */
function linkTargets(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map(
    (match) => match[1] ?? '',
  );
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  for (const match of prose.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = (match[1] ?? '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    let anchor = base;
    for (let n = 1; anchors.has(anchor); n++) anchor = `${base}-${n}`;
    anchors.add(anchor);
  }
  return anchors;
}

function brokenLinks(file: string): string[] {
  const broken: string[] = [];
  for (const target of linkTargets(readFileSync(file, 'utf8'))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const [pathPart = '', anchor] = target.split('#');
    const resolved = pathPart === '' ? file : join(dirname(file), decodeURIComponent(pathPart));
    if (!existsSync(resolved)) {
      broken.push(`${target}: no such file`);
    } else if (!relative(REPO_ROOT, resolved) || relative(REPO_ROOT, resolved).startsWith('..')) {
      broken.push(`${target}: outside the repository`);
    } else if (anchor !== undefined && resolved.endsWith('.md')) {
      if (!headingAnchors(readFileSync(resolved, 'utf8')).has(anchor))
        broken.push(`${target}: no such heading`);
    }
  }
  return broken;
}

describe('links in README.md and docs/', () => {
  it('checks the operator docs, which link to the deployment files', () => {
    const names = documents.map((file) => relative(REPO_ROOT, file));
    expect(names).toEqual(expect.arrayContaining(['README.md', 'docs/limits.md', 'docs/operations.md']));
    for (const name of ['README.md', 'docs/limits.md', 'docs/operations.md']) {
      expect(linkTargets(readFileSync(repoPath(name), 'utf8')).length, name).toBeGreaterThan(3);
    }
  });

  it.each(documents.map((file) => [relative(REPO_ROOT, file), file]))(
    '%s links only to what exists',
    (_name, file) => {
      expect(brokenLinks(file)).toEqual([]);
    },
  );

  it('finds links and anchors as GitHub renders them', () => {
    const sample =
      '# Error reasons\n## The `limit_exceeded` reason\n[a](x.md#y) `[b](not-a-link)` ![c](d.png "t")\n';
    expect(linkTargets(sample)).toEqual(['x.md#y', 'd.png']);
    expect([...headingAnchors(sample)]).toEqual(['error-reasons', 'the-limit_exceeded-reason']);
  });
});
