// The Helm chart (deploy/helm/mcp-edge) as the real `helm` CLI renders it, for the chart's tests: helm's own
// binary ($HELM_BIN, scripts/install-helm.sh's, or helm on PATH), and readers of what it prints.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { MiB } from '../../scripts/memory-formula.js';
import { parseConfigText } from '../../src/config/load.js';
import { REPO_ROOT } from '../support/processes.js';
import type { Manifest } from './kube-schema.js';
import { at, isRecord, listAt, manifestOf, repoPath } from './repo-files.js';

export const CHART = repoPath('deploy/helm/mcp-edge');
/** The release name with which the chart renders the kustomize example's names. */
export const RELEASE = 'mcp-server';
/** The commented example values of the kustomize example's sample tenants. */
export const TENANTS_EXAMPLE = repoPath('deploy/helm/examples/tenants-values.yaml');
/** scripts/install-helm.sh's folder (the version it pins). */
const INSTALLED_HELM = join(process.env.TMPDIR ?? tmpdir(), 'mcp-edge-helm-v4.1.4', 'helm');
export const CONFIG_KEY = 'mcp-edge.yaml';
const run = promisify(execFile);

export type Record_ = Record<string, unknown>;

/** $HELM_BIN, else what scripts/install-helm.sh installed, else `helm` on PATH. */
function helmBinary(): string {
  const fromEnv = process.env.HELM_BIN;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  return existsSync(INSTALLED_HELM) ? INSTALLED_HELM : 'helm';
}

/** helm's stdout; rejects with its stderr (what a user would read) when it exits non-zero. */
export async function helm(args: string[]): Promise<string> {
  try {
    const { stdout } = await run(helmBinary(), args, { cwd: REPO_ROOT, maxBuffer: 16 * MiB });
    return stdout;
  } catch (error) {
    const { code, stderr, stdout } = error as { code?: unknown; stderr?: string; stdout?: string };
    if (code === 'ENOENT') {
      throw new Error(
        'no helm: run `bash scripts/install-helm.sh` (Linux x86-64), `brew install helm`, or set HELM_BIN',
      );
    }
    throw new Error(`helm ${args.join(' ')}: ${stderr ?? String(error)}${stdout ?? ''}`);
  }
}

export interface RenderOptions {
  release?: string;
  /** Values files (`-f`), in order. */
  files?: string[];
}

/** The chart's manifests for `--set` values, as `helm template` prints them. */
export async function render(values: string[] = [], options: RenderOptions = {}): Promise<Manifest[]> {
  const text = await helm([
    'template',
    options.release ?? RELEASE,
    CHART,
    '--namespace',
    'default',
    ...(options.files ?? []).flatMap((file) => ['-f', file]),
    ...values.flatMap((v) => ['--set', v]),
  ]);
  return parseAllDocuments(text).flatMap((document, index) => {
    const value: unknown = document.toJS();
    return isRecord(value) ? [{ origin: `helm template#${index} (${String(value.kind)})`, value }] : [];
  });
}

export function edgeContainer(deployment: Record_): Record_ {
  const spec = at(deployment, 'spec', 'template', 'spec') as Record_;
  const all = [
    ...(Array.isArray(spec.initContainers) ? spec.initContainers : []),
    ...listAt(spec, 'containers'),
  ];
  const edge = all.filter(isRecord).find((container) => container.name === 'mcp-edge');
  if (edge === undefined) throw new Error('no mcp-edge container');
  return edge;
}

/** The config file of the rendered ConfigMap, as mcp-edge loads it. */
export function renderedConfig(
  manifests: readonly Manifest[],
  env: Record<string, string> = {},
  release = RELEASE,
) {
  const configMap = manifestOf(manifests, 'ConfigMap', `${release}-mcp-edge-config`);
  return parseConfigText(String(at(configMap, 'data', CONFIG_KEY)), 'chart ConfigMap', env).config;
}
