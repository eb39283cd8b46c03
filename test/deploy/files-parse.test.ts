// Every YAML and JSON file under deploy/ and grafana/ parses: a syntax slip in a manifest, a mounted
// config or the dashboard would otherwise surface only when an operator applies it.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/processes.js';
import { filesUnder, repoPath, yamlDocuments } from './repo-files.js';

const FOLDERS = ['deploy', 'grafana'];
// A Helm chart's templates are YAML only once rendered: test/deploy/helm.test.ts renders and checks them.
const yamlFiles = FOLDERS.flatMap((folder) => filesUnder(repoPath(folder), ['.yaml', '.yml'])).filter(
  (path) => !path.includes('/helm/mcp-edge/templates/'),
);
const jsonFiles = FOLDERS.flatMap((folder) => filesUnder(repoPath(folder), ['.json']));

describe('the deployment and dashboard files parse', () => {
  it('finds the files it checks', () => {
    const names = [...yamlFiles, ...jsonFiles].map((path) => relative(REPO_ROOT, path));
    expect(names).toEqual(
      expect.arrayContaining([
        'deploy/kubernetes/deployment.yaml',
        'deploy/compose/compose.yaml',
        'deploy/prometheus/alerts.yaml',
        'grafana/dashboards/mcp-edge.json',
      ]),
    );
  });

  it.each(yamlFiles.map((path) => [relative(REPO_ROOT, path), path]))('%s is valid YAML', (_name, path) => {
    expect(yamlDocuments(path).length).toBeGreaterThan(0);
  });

  it.each(jsonFiles.map((path) => [relative(REPO_ROOT, path), path]))('%s is valid JSON', (_name, path) => {
    const value: unknown = JSON.parse(readFileSync(path, 'utf8'));
    expect(typeof value).toBe('object');
  });

  it('would report a syntax error with its line (the check is real)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-yaml-'));
    const path = join(dir, 'broken.yaml');
    writeFileSync(path, 'kind: ConfigMap\ndata:\n  a: 1\n   b: 2\n');
    try {
      expect(() => yamlDocuments(path)).toThrow(/broken\.yaml: .*at line 3, column 6/s);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
