// The `mcp-edge` command as a Node user gets it: `npx mcp-edge` in a checkout after the build, and the
// `bin` of the package `npm pack` makes, installed into another project. The checkout is a copy, so that
// the build this runs (npm pack's prepack) never touches the working tree under test.
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesUnder, readText } from '../deploy/repo-files.js';
import { type ChildHandle, REPO_ROOT, type SpawnOptions, spawnProgram } from '../support/processes.js';

const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  bin: Record<string, string>;
};

/** What the package is built and packed from: package.json's `files`, and the build's inputs. */
const CHECKOUT_ENTRIES = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'src',
  'config',
  'schema',
  'README.md',
  'LICENSE',
  'CHANGELOG.md',
];
// npm pack runs the TypeScript build (prepack), npm install reads the dependencies from npm's cache.
const SETUP_MS = 600_000;

const children: ChildHandle[] = [];
let root = '';
let checkout = '';
let consumer = '';
let tarball = '';

async function run(program: string, args: string[], opts: SpawnOptions = {}, input?: string) {
  const child = spawnProgram(program, args, { ...opts, ...(input !== undefined ? { stdin: true } : {}) });
  children.push(child);
  if (input !== undefined) child.child.stdin?.end(input);
  const exit = await child.exited;
  const output = { code: exit.code, stdout: child.stdout(), stderr: child.stderr() };
  if (exit.code !== 0) {
    throw new Error(
      `${program} ${args.join(' ')} exited ${String(exit.code)}\n${output.stderr.slice(-4000)}`,
    );
  }
  return output;
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'mcp-edge-bin-'));
  checkout = join(root, 'checkout');
  consumer = join(root, 'consumer');
  mkdirSync(checkout);
  for (const entry of CHECKOUT_ENTRIES)
    cpSync(join(REPO_ROOT, entry), join(checkout, entry), { recursive: true });
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(checkout, 'node_modules'), 'dir');
  const packed = await run('npm', ['pack', '--pack-destination', root, '--json'], { cwd: checkout });
  const [made] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as { filename: string }[];
  if (made === undefined) throw new Error(`npm pack made nothing:\n${packed.stdout}`);
  tarball = join(root, made.filename);
  mkdirSync(consumer);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], { cwd: consumer });
}, SETUP_MS);

afterAll(async () => {
  for (const child of children.splice(0)) await child.stop();
  if (root !== '') rmSync(root, { recursive: true, force: true });
}, SETUP_MS);

// Each test starts npx or the CLI (npx alone took 13 s on an idle machine): minutes when the machine is loaded.
describe('the mcp-edge command', { timeout: 180_000 }, () => {
  it("package.json's bin is the built CLI, which starts with a node shebang", () => {
    expect(pkg.bin).toEqual({ 'mcp-edge': 'dist/cli.js' });
    const built = readFileSync(join(checkout, 'dist/cli.js'), 'utf8');
    expect(built.split('\n')[0]).toBe('#!/usr/bin/env node');
  });

  it('npx mcp-edge runs it from the checkout after the build', async () => {
    const help = await run('npx', ['mcp-edge', '--help'], { cwd: checkout });
    expect(help.stdout).toContain('mcp-edge check-config FILE');
    const version = await run('npx', ['mcp-edge', '--version'], { cwd: checkout });
    expect(version.stdout.trim()).toBe(pkg.version);
  });

  it('the packed package carries the CLI, the LICENSE and the CHANGELOG', async () => {
    const listed = await run('tar', ['-tzf', tarball]);
    const files = listed.stdout.split('\n');
    for (const file of [
      'dist/cli.js',
      'LICENSE',
      'CHANGELOG.md',
      'README.md',
      'config/mcp-edge.example.yaml',
    ]) {
      expect(files).toContain(`package/${file}`);
    }
  });

  it('installed from the packed tarball, its bin is an executable mcp-edge (npx and node_modules/.bin)', async () => {
    const bin = join(consumer, 'node_modules/.bin/mcp-edge');
    const version = await run(bin, ['--version'], { cwd: consumer });
    expect(version.stdout.trim()).toBe(pkg.version);
    const key = 'an-api-key-for-the-test';
    const hashed = await run('npx', ['mcp-edge', 'hash-key'], { cwd: consumer }, key);
    expect(hashed.stdout.trim()).toBe(createHash('sha256').update(key).digest('hex'));
    const check = await run(
      'npx',
      ['mcp-edge', 'check-config', join(consumer, 'node_modules', pkg.name, 'config/demo.yaml')],
      { cwd: consumer },
    );
    expect(check.stdout).toContain('upstream:');
  });
});

describe('the docs spell the command one way', () => {
  // deploy/prometheus is the alert rules' folder, whose texts the metrics work owns.
  const documents = [
    'README.md',
    ...filesUnder(join(REPO_ROOT, 'docs'), ['.md']),
    ...filesUnder(join(REPO_ROOT, 'config'), ['.yaml']),
    ...filesUnder(join(REPO_ROOT, 'deploy'), ['.yaml', '.md']).filter(
      (path) => !path.includes('/prometheus/'),
    ),
  ].map((path) => relative(REPO_ROOT, resolve(REPO_ROOT, path)));

  it('as `npx mcp-edge ...`, never `node dist/cli.js` or a bare `mcp-edge explain`', () => {
    const invocation =
      /(?<![\w/.-])(npx )?mcp-edge (check-config|explain|hash-key|--config|--upstream|--stdio)\b/g;
    const misspelt: string[] = [];
    for (const document of documents) {
      readText(join(REPO_ROOT, document))
        .split('\n')
        .forEach((line, index) => {
          const bare = [...line.matchAll(invocation)].some((match) => match[1] === undefined);
          if (bare || line.includes('node dist/cli.js'))
            misspelt.push(`${document}:${index + 1}: ${line.trim()}`);
        });
    }
    expect(documents).toContain('docs/operations.md');
    expect(misspelt).toEqual([]);
  });
});

describe('the release files', () => {
  it("LICENSE is the Apache License 2.0, as package.json's license says", () => {
    const license = readText(join(REPO_ROOT, 'LICENSE'));
    expect((JSON.parse(readText(join(REPO_ROOT, 'package.json'))) as { license: string }).license).toBe(
      'Apache-2.0',
    );
    expect(license).toContain('Apache License');
    expect(license).toContain('Version 2.0, January 2004');
    expect(license).toContain('END OF TERMS AND CONDITIONS');
  });

  it("CHANGELOG.md has an Unreleased section and one for package.json's version", () => {
    const headings = readText(join(REPO_ROOT, 'CHANGELOG.md'))
      .split('\n')
      .filter((line) => line.startsWith('## '));
    expect(headings[0]).toBe('## Unreleased');
    expect(headings).toContain(`## ${pkg.version}`);
  });
});
