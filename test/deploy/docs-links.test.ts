// The operator docs must lead somewhere: every relative link in README.md and docs/ names a file of the
// repository, and every #anchor into a Markdown file names one of its headings. The same for the paths
// that the comments of the deployment files (manifests, Dockerfile, compose, provisioning) tell a reader
// to open or apply.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/processes.js';
import { filesUnder, headingAnchors, repoPath } from './repo-files.js';

const documents = [repoPath('README.md'), ...filesUnder(repoPath('docs'), ['.md'])];

/** Link targets of inline Markdown links and images, outside code spans and fenced blocks. */
function linkTargets(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map(
    (match) => match[1] ?? '',
  );
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

// ---- paths in the comments of the deployment files ---------------------------------------------

const DEPLOYMENT_FILES = [
  ...filesUnder(repoPath('deploy'), ['.yaml', '.yml', 'Dockerfile']),
  ...filesUnder(repoPath('grafana/provisioning'), ['.yaml', '.yml']),
];

/** The repository's own top-level folders: a comment word starting with one of them is a repository path. */
const TOP_LEVEL = readdirSync(REPO_ROOT, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.') && entry.name !== 'node_modules')
  .map((entry) => entry.name);

const FILE_NAME = /\.(ya?ml|json|ts|md|cjs|mjs|js)$/;

/** The comment text of each line (`# ...`, whole-line or after a value). */
function comments(text: string): { line: number; text: string }[] {
  return text.split('\n').flatMap((line, index) => {
    const match = /(?:^|\s)#(.*)$/.exec(line);
    return match ? [{ line: index + 1, text: match[1] ?? '' }] : [];
  });
}

/**
 * Words of a comment that name a file or folder: `deploy/kubernetes/x` (from the repository root),
 * `../x.yaml`, `sub/x.yaml` and `x.yaml` (from the file's folder). Not URLs, absolute container paths,
 * `$VAR/...`, or image references (`grafana/grafana:11.6.0`).
 */
function commentPaths(text: string): { line: number; path: string; fromRoot: boolean }[] {
  const found: { line: number; path: string; fromRoot: boolean }[] = [];
  for (const comment of comments(text)) {
    for (const match of comment.text.matchAll(
      /(?<![\w/.:@$-])((?:\.{1,2}\/)*[\w.-]+(?:\/[\w.-]+)*\/?)(:\d)?/g,
    )) {
      const word = (match[1] ?? '').replace(/\.+$/, '');
      if (match[2] !== undefined) continue; // name:tag, an image
      const fromRoot = TOP_LEVEL.some((folder) => word.startsWith(`${folder}/`));
      if (fromRoot || FILE_NAME.test(word)) found.push({ line: comment.line, path: word, fromRoot });
    }
  }
  return found;
}

function brokenCommentPaths(file: string): string[] {
  return commentPaths(readFileSync(file, 'utf8'))
    .filter(({ path, fromRoot }) => !existsSync(fromRoot ? join(REPO_ROOT, path) : join(dirname(file), path)))
    .map(({ line, path }) => `${relative(REPO_ROOT, file)}:${line}: ${path}: no such file or folder`);
}

describe('paths named in the comments of the deployment files', () => {
  it('checks the manifests, the Dockerfile, compose and the provisioning files', () => {
    const names = DEPLOYMENT_FILES.map((file) => relative(REPO_ROOT, file));
    expect(names).toEqual(
      expect.arrayContaining([
        'deploy/docker/Dockerfile',
        'deploy/kubernetes/deployment.yaml',
        'deploy/compose/compose.yaml',
        'grafana/provisioning/dashboards/mcp-edge.yaml',
      ]),
    );
    const deployment = commentPaths(readFileSync(repoPath('deploy/kubernetes/deployment.yaml'), 'utf8'));
    expect(deployment.length).toBeGreaterThan(3);
  });

  it.each(DEPLOYMENT_FILES.map((file) => [relative(REPO_ROOT, file), file]))(
    '%s names only paths that exist',
    (_name, file) => {
      expect(brokenCommentPaths(file)).toEqual([]);
    },
  );

  it('finds the paths a reader would follow, and only those', () => {
    const sample = [
      'kind: Deployment # see service.yaml',
      '# `kubectl apply -k deploy/kubernetes/plain-container` (see plain-container/kustomization.yaml).',
      '#   docker run -v "$PWD/grafana/provisioning:/etc/grafana/provisioning" grafana/grafana:11.6.0',
      '# at https://example.com/x.yaml or /etc/mcp-edge/mcp-edge.yaml, image registry.example.com/mcp-edge',
      'image: mcp-edge:0.1.0',
    ].join('\n');
    expect(commentPaths(sample).map(({ line, path }) => `${line}: ${path}`)).toEqual([
      '1: service.yaml',
      '2: deploy/kubernetes/plain-container',
      '2: plain-container/kustomization.yaml',
    ]);
  });
});
