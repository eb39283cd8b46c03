// Reading the deployment artifacts as a user's tools would: YAML documents, the sidecar example's
// manifests (through its kustomization.yaml), and the JSON Patch of its plain-container variant.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../support/processes.js';
import type { Manifest } from './kube-schema.js';

export const KUBERNETES_DIR = join(REPO_ROOT, 'deploy/kubernetes');
export const COMPOSE_DIR = join(REPO_ROOT, 'deploy/compose');
export const DOCKERFILE = join(REPO_ROOT, 'deploy/docker/Dockerfile');

export function repoPath(...parts: string[]): string {
  return join(REPO_ROOT, ...parts);
}

export function readText(path: string): string {
  return readFileSync(path, 'utf8');
}

/**
 * Every file under `dir` (recursively) whose name ends with one of `extensions`, sorted. Symbolic links are
 * left out: what one points at is checked where it lives (the Helm chart links deploy/prometheus/alerts.yaml).
 */
export function filesUnder(dir: string, extensions: readonly string[]): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isSymbolicLink()) continue;
    if (entry.isDirectory()) found.push(...filesUnder(path, extensions));
    else if (extensions.some((extension) => entry.name.endsWith(extension))) found.push(path);
  }
  return found.sort();
}

/** The documents of a YAML file; throws with the file, line and reason on any syntax error. */
export function yamlDocuments(path: string): unknown[] {
  const documents = parseAllDocuments(readText(path), { prettyErrors: true, uniqueKeys: true });
  const list = Array.isArray(documents) ? documents : [documents];
  const values: unknown[] = [];
  for (const document of list) {
    const problem = document.errors[0];
    if (problem !== undefined) throw new Error(`${relative(REPO_ROOT, path)}: ${problem.message}`);
    const value: unknown = document.toJS();
    if (value !== null && value !== undefined) values.push(value);
  }
  return values;
}

/** The one document of a YAML file, as a mapping. */
export function yamlMapping(path: string): Record<string, unknown> {
  const documents = yamlDocuments(path);
  const [first] = documents;
  if (documents.length !== 1 || !isRecord(first)) {
    throw new Error(`${relative(REPO_ROOT, path)}: expected one YAML mapping`);
  }
  return first;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value at a path of keys and indexes; throws naming the path when it is missing. */
export function at(value: unknown, ...path: (string | number)[]): unknown {
  let current: unknown = value;
  for (const key of path) {
    if (typeof key === 'number' ? !Array.isArray(current) : !isRecord(current)) {
      throw new Error(`no ${path.join('.')}`);
    }
    current = (current as Record<string | number, unknown>)[key];
    if (current === undefined) throw new Error(`no ${path.join('.')}`);
  }
  return current;
}

export function listAt(value: unknown, ...path: (string | number)[]): unknown[] {
  const list = at(value, ...path);
  if (!Array.isArray(list)) throw new Error(`${path.join('.')} is not a list`);
  return list;
}

// ---- the sidecar example -----------------------------------------------------------------------

export const KUSTOMIZATION = join(KUBERNETES_DIR, 'kustomization.yaml');

/** The files kustomization.yaml lists under resources. */
export function kustomizationResources(): string[] {
  return listAt(yamlMapping(KUSTOMIZATION), 'resources').map(String);
}

/** Every manifest that `kubectl apply -k deploy/kubernetes` would send, by file and document index. */
export function sidecarManifests(): Manifest[] {
  return kustomizationResources().flatMap((file) =>
    yamlDocuments(join(KUBERNETES_DIR, file)).map((value, index) => {
      if (!isRecord(value)) throw new Error(`${file}#${index} is not a mapping`);
      return { origin: `${file}#${index}`, value };
    }),
  );
}

export function manifestOf(
  manifests: readonly Manifest[],
  kind: string,
  name: string,
): Record<string, unknown> {
  const found = manifests.find(
    (manifest) => manifest.value.kind === kind && at(manifest.value, 'metadata', 'name') === name,
  );
  if (found === undefined) throw new Error(`no ${kind} ${name}`);
  return found.value;
}

export function manifestsOfKind(manifests: readonly Manifest[], kind: string): Record<string, unknown>[] {
  return manifests.filter((manifest) => manifest.value.kind === kind).map((manifest) => manifest.value);
}

// ---- JSON Patch (RFC 6902), the operations kustomize applies from plain-container.patch.yaml --------

export interface PatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move';
  path: string;
  from?: string;
  value?: unknown;
}

function pointerSegments(pointer: string): string[] {
  if (!pointer.startsWith('/')) throw new Error(`bad JSON pointer "${pointer}"`);
  return pointer
    .slice(1)
    .split('/')
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parentAndKey(document: unknown, pointer: string): { parent: unknown; key: string } {
  const segments = pointerSegments(pointer);
  const key = segments.pop() ?? '';
  let parent: unknown = document;
  for (const segment of segments) {
    parent = Array.isArray(parent) ? parent[Number(segment)] : isRecord(parent) ? parent[segment] : undefined;
    if (parent === undefined) throw new Error(`JSON patch: ${pointer} does not exist`);
  }
  return { parent, key };
}

function removeAt(document: unknown, pointer: string): unknown {
  const { parent, key } = parentAndKey(document, pointer);
  if (Array.isArray(parent)) {
    const index = Number(key);
    if (!(index >= 0 && index < parent.length)) throw new Error(`JSON patch: ${pointer} does not exist`);
    return parent.splice(index, 1)[0];
  }
  if (!isRecord(parent) || !Object.hasOwn(parent, key))
    throw new Error(`JSON patch: ${pointer} does not exist`);
  const value = parent[key];
  delete parent[key];
  return value;
}

function addAt(document: unknown, pointer: string, value: unknown): void {
  const { parent, key } = parentAndKey(document, pointer);
  if (Array.isArray(parent)) {
    if (key === '-') parent.push(value);
    else parent.splice(Number(key), 0, value);
  } else if (isRecord(parent)) parent[key] = value;
  else throw new Error(`JSON patch: cannot add at ${pointer}`);
}

/** Applies the operations to a deep copy of `document`; throws on a path that does not exist. */
export function applyJsonPatch<T>(document: T, operations: readonly PatchOperation[]): T {
  const result = structuredClone(document);
  for (const operation of operations) {
    switch (operation.op) {
      case 'remove':
        removeAt(result, operation.path);
        break;
      case 'add':
        addAt(result, operation.path, structuredClone(operation.value));
        break;
      case 'replace':
        removeAt(result, operation.path);
        addAt(result, operation.path, structuredClone(operation.value));
        break;
      case 'move': {
        if (operation.from === undefined) throw new Error('JSON patch: move without from');
        addAt(result, operation.path, removeAt(result, operation.from));
        break;
      }
    }
  }
  return result;
}

// ---- Kubernetes quantities -----------------------------------------------------------------------

const QUANTITY_UNITS: Record<string, number> = {
  '': 1,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  k: 1e3,
  M: 1e6,
  G: 1e9,
};

/** A memory quantity (`640Mi`, `1Gi`, `512M`) in bytes; throws on a form this reader does not know. */
export function memoryQuantityBytes(quantity: unknown): number {
  const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|k|M|G)?$/.exec(String(quantity));
  if (match === null) throw new Error(`not a memory quantity: ${String(quantity)}`);
  return Number(match[1]) * (QUANTITY_UNITS[match[2] ?? ''] ?? Number.NaN);
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function headingAnchors(markdown: string): Set<string> {
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
