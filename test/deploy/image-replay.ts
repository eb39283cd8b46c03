// An image build without Docker (no daemon runs here): a Dockerfile's final stage replayed into a temp
// folder that stands for the image's root filesystem (WORKDIR, COPY from the context or the build stage,
// the same `npm ci` from the npm cache, mkdir), and the image's processes started from that folder with
// image paths mapped into it. A RUN or instruction this replay does not know fails the replay, so a
// Dockerfile step cannot go unverified by being skipped.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, posix, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect } from 'vitest';
import { type ChildHandle, REPO_ROOT, spawnNode } from '../support/processes.js';
import {
  copyParts,
  type Dockerfile,
  envOf,
  execForm,
  type Instruction,
  instructionsOf,
  isIgnored,
  parseDockerfile,
  type Stage,
} from './dockerfile.js';
import { readText } from './repo-files.js';

const execFileAsync = promisify(execFile);

/** The ignore file BuildKit reads for a Dockerfile: `<Dockerfile>.dockerignore` beside it, else the context's. */
export function dockerignoreFor(dockerfilePath: string): string {
  const own = `${dockerfilePath}.dockerignore`;
  return readText(existsSync(own) ? own : join(REPO_ROOT, '.dockerignore'));
}

/** ENTRYPOINT followed by CMD (both exec form): the command the image starts. */
export function imageCommandOf(stage: Stage): string[] {
  return [
    ...execForm(instructionsOf(stage, 'ENTRYPOINT').at(-1)?.args ?? '[]'),
    ...execForm(instructionsOf(stage, 'CMD').at(-1)?.args ?? '[]'),
  ];
}

function buildStageOf(dockerfile: Dockerfile): Stage {
  const finalStage = dockerfile.stages.at(-1);
  const buildStage = dockerfile.stages.find((stage) => stage.name !== undefined && stage !== finalStage);
  if (buildStage === undefined) throw new Error('no build stage');
  return buildStage;
}

/** Every file under a context path, sorted, as paths relative to the repository root. */
function contextFiles(source: string): string[] {
  const path = join(REPO_ROOT, source);
  if (!statSync(path).isDirectory()) return [source];
  return readdirSync(path, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(REPO_ROOT, join(entry.parentPath, entry.name)))
    .sort();
}

/** A digest of what the build stage compiles: its instructions and every file its COPYs take in. */
function buildStageKey(buildStage: Stage): string {
  const hash = createHash('sha256');
  for (const instruction of buildStage.instructions) {
    hash.update(`${instruction.keyword} ${JSON.stringify(instruction.flags)} ${instruction.args}\n`);
    if (instruction.keyword !== 'COPY') continue;
    for (const file of copyParts(instruction).sources.flatMap(contextFiles)) {
      hash
        .update(`${file}\0`)
        .update(readFileSync(join(REPO_ROOT, file)))
        .update('\0');
    }
  }
  hash.update(readText(join(REPO_ROOT, 'node_modules/typescript/package.json')));
  return hash.digest('hex').slice(0, 16);
}

const BUILD_CACHE_PREFIX = 'mcp-edge-build-stage-';
const BUILD_CACHE_MAX_AGE_MS = 24 * 3600_000;

/**
 * `npm run build` of the build stage: the package's build script (tsc), its output in a folder of the
 * temp dir keyed by the digest of the build inputs. Both Dockerfiles have the same build stage, so their
 * tests (and reruns) compile once; a folder appears whole (renamed into place) or not at all, and
 * folders of other inputs unused for a day are removed.
 */
export async function buildStageDist(dockerfile: Dockerfile): Promise<string> {
  const buildStage = buildStageOf(dockerfile);
  expect(instructionsOf(buildStage, 'RUN').map((run) => run.args)).toContain('npm run build');
  const pkg = JSON.parse(readText(join(REPO_ROOT, 'package.json'))) as { scripts: Record<string, string> };
  const [tool, ...args] = (pkg.scripts.build ?? '').split(/\s+/);
  expect(tool).toBe('tsc');
  const key = buildStageKey(buildStage);
  const cached = join(tmpdir(), `${BUILD_CACHE_PREFIX}${key}`);
  for (const entry of readdirSync(tmpdir())) {
    const path = join(tmpdir(), entry);
    if (!entry.startsWith(BUILD_CACHE_PREFIX) || path === cached) continue;
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat !== undefined && Date.now() - stat.mtimeMs > BUILD_CACHE_MAX_AGE_MS) {
      rmSync(path, { recursive: true, force: true });
    }
  }
  if (!existsSync(cached)) {
    const building = mkdtempSync(join(tmpdir(), 'mcp-edge-building-'));
    await execFileAsync(
      process.execPath,
      [join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), ...args, '--outDir', building],
      { cwd: REPO_ROOT, timeout: 180_000 },
    );
    try {
      renameSync(building, cached);
    } catch {
      // Another test file compiled the same inputs at the same time: its folder is as good as ours.
      rmSync(building, { recursive: true, force: true });
    }
  }
  const now = new Date();
  utimesSync(cached, now, now);
  return cached;
}

/** Copies a context path the way COPY does: into a folder for `dir/` destinations, else onto the destination. */
function copyInto(source: string, destination: string, manySources: boolean): void {
  const target = destination.endsWith('/') || manySources ? join(destination, basename(source)) : destination;
  mkdirSync(join(target, '..'), { recursive: true });
  cpSync(source, target, { recursive: true });
}

/** Every file of a tree with its size and modification time: what a read-only root filesystem must keep. */
export function treeSnapshot(dir: string): Map<string, string> {
  const snapshot = new Map<string, string>();
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat !== undefined) snapshot.set(path, `${stat.isDirectory() ? 'd' : stat.size}:${stat.mtimeMs}`);
  }
  return snapshot;
}

export interface ReplayedImage {
  /** The temp folder that plays the image's root filesystem. */
  root: string;
  finalStage: Stage;
  /** The ENV of the final stage. */
  env: Record<string, string>;
  /** The final stage's last WORKDIR: where the image's processes start. */
  workdir: string;
  /** The final USER (`uid:gid` as written), which the replay cannot switch to. */
  user: string | undefined;
  /** Owner (`uid:gid`) each `RUN chown` gave, by image path: recorded, as a non-root replay cannot chown. */
  chowned: Record<string, string>;
  /** An absolute path inside the image, as a path of the temp root. */
  inImage(path: string): string;
  /** Image paths in a command line become temp-root paths; `node` is this Node. */
  hostArgs(command: readonly string[]): string[];
  /** Starts an image command in the final WORKDIR with the image's ENV (plus `env`). */
  start(command: readonly string[], env?: Record<string, string | undefined>): ChildHandle;
  /** Runs the image's HEALTHCHECK command against `url`; resolves with its exit code. */
  healthcheck(url: string): Promise<number | null>;
  /** Stops every process started here (by its handle) and removes the root. */
  remove(): Promise<void>;
}

/** Flags of `npm ci` with image paths (`--prefix /opt/x`, `--prefix=/opt/x`) mapped into the root. */
function hostNpmFlags(flags: readonly string[], inImage: (path: string) => string): string[] {
  return flags.map((flag, index) => {
    if (flag.startsWith('--prefix=')) return `--prefix=${inImage(flag.slice('--prefix='.length))}`;
    return flags[index - 1] === '--prefix' ? inImage(flag) : flag;
  });
}

/** RUN --mount flags the replay honors: BuildKit's npm cache, which here is the host's own npm cache. */
function checkRunFlags(instruction: Instruction): void {
  for (const [name, value] of Object.entries(instruction.flags)) {
    if (name === 'mount' && /^type=cache,target=\/root\/\.npm$/.test(value)) continue;
    throw new Error(`line ${instruction.line}: RUN --${name}=${value} is not known to this replay`);
  }
}

/** Metadata of the image, not steps of its filesystem: read from the stage where needed. */
const METADATA = new Set(['ENV', 'USER', 'EXPOSE', 'HEALTHCHECK', 'ENTRYPOINT', 'CMD', 'LABEL']);

/**
 * Replays `dockerfilePath`'s final stage into a new temp root, with the build stage's dist compiled by
 * `buildStageDist`.
 */
export async function replayImage(dockerfilePath: string): Promise<ReplayedImage> {
  const dockerfile = parseDockerfile(readText(dockerfilePath));
  const finalStage = dockerfile.stages.at(-1) as Stage;
  const buildStage = buildStageOf(dockerfile);
  const dockerignore = dockerignoreFor(dockerfilePath);
  const builtDist = await buildStageDist(dockerfile);
  const root = mkdtempSync(join(tmpdir(), 'mcp-edge-image-'));
  const inImage = (path: string): string => join(root, path);
  const children: ChildHandle[] = [];
  const env: Record<string, string> = {};
  const chowned: Record<string, string> = {};
  let workdir = '/';
  let user: string | undefined;

  async function replayRun(instruction: Instruction): Promise<void> {
    checkRunFlags(instruction);
    // `a && b` runs b after a succeeded; anything else of the shell (quotes, pipes, variables) is not known.
    for (const command of instruction.args.split(/\s+&&\s+/)) {
      const unknown = new Error(`line ${instruction.line}: a RUN this replay does not know: ${command}`);
      if (!/^[\w./:=@ -]+$/.test(command)) throw unknown;
      const [program, ...args] = command.split(/\s+/);
      if (program === 'npm' && args[0] === 'ci') {
        const flags = args.slice(1);
        expect(flags).toContain('--omit=dev');
        // The same install from the npm cache that `npm ci` in the repository filled: no network needed.
        await execFileAsync('npm', ['ci', ...hostNpmFlags(flags, inImage), '--offline'], {
          cwd: inImage(workdir),
          env: { ...process.env, ...env },
          timeout: 240_000,
        });
      } else if (program === 'mkdir' && args.every((arg) => arg.startsWith('/'))) {
        for (const dir of args) mkdirSync(inImage(dir));
      } else if (program === 'chown' && args.length === 2 && /^\d+:\d+$/.test(args[0] ?? '')) {
        const [owner = '', path = ''] = args;
        if (!existsSync(inImage(posix.resolve(workdir, path)))) throw new Error(`chown: no ${path}`);
        chowned[posix.resolve(workdir, path)] = owner;
      } else {
        throw unknown;
      }
    }
  }

  async function replayInstruction(instruction: Instruction): Promise<void> {
    if (instruction.keyword === 'WORKDIR') {
      workdir = instruction.args;
      mkdirSync(inImage(workdir), { recursive: true });
    } else if (instruction.keyword === 'COPY') {
      const { sources, destination } = copyParts(instruction);
      const target = inImage(posix.isAbsolute(destination) ? destination : posix.join(workdir, destination));
      const { from, ...otherFlags } = instruction.flags;
      if (Object.keys(otherFlags).length > 0) {
        throw new Error(
          `line ${instruction.line}: COPY flags this replay does not know: ${instruction.args}`,
        );
      }
      for (const source of sources) {
        if (from !== undefined) {
          // The build stage's output: only its dist folder is taken over.
          expect(from).toBe(buildStage.name);
          expect(posix.basename(source)).toBe('dist');
          copyInto(builtDist, destination.endsWith('/') ? join(target, 'dist') : target, false);
        } else {
          expect(isIgnored(dockerignore, source), `${source} is left out by the dockerignore`).toBe(false);
          copyInto(join(REPO_ROOT, source), target, sources.length > 1);
        }
      }
    } else if (instruction.keyword === 'RUN') {
      await replayRun(instruction);
    } else if (instruction.keyword === 'ENV') {
      Object.assign(env, envOf({ ...finalStage, instructions: [instruction] }));
    } else if (instruction.keyword === 'USER') {
      user = instruction.args;
    } else if (!METADATA.has(instruction.keyword)) {
      throw new Error(`line ${instruction.line}: ${instruction.keyword} is not known to this replay`);
    }
  }

  try {
    for (const instruction of finalStage.instructions) await replayInstruction(instruction);
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }

  function hostArgs(command: readonly string[]): string[] {
    const [program, ...args] = command;
    if (program !== 'node') throw new Error(`expected a node command, got ${command.join(' ')}`);
    return args.map((arg) => (arg.startsWith('/') ? inImage(arg) : arg));
  }

  function start(command: readonly string[], extraEnv: Record<string, string | undefined> = {}): ChildHandle {
    const child = spawnNode(hostArgs(command), { cwd: inImage(workdir), env: { ...env, ...extraEnv } });
    children.push(child);
    return child;
  }

  async function healthcheck(url: string): Promise<number | null> {
    const instruction = instructionsOf(finalStage, 'HEALTHCHECK').at(-1);
    if (instruction === undefined) throw new Error('no HEALTHCHECK');
    const command = execForm(instruction.args.replace(/^CMD\s+/, ''));
    const child = start(command, { MCP_EDGE_HEALTHCHECK_URL: url });
    return (await child.exited).code;
  }

  async function remove(): Promise<void> {
    for (const child of children.splice(0)) await child.stop();
    rmSync(root, { recursive: true, force: true });
  }

  return {
    root,
    finalStage,
    env,
    workdir,
    user,
    chowned,
    inImage,
    hostArgs,
    start,
    healthcheck,
    remove,
  };
}

/**
 * Replays `dockerfilePath` before the calling test file's tests and removes it after them; the returned
 * function gives the tests the replayed image.
 */
export function replayedForThisFile(dockerfilePath: string): () => ReplayedImage {
  let image: ReplayedImage | undefined;
  beforeAll(async () => {
    image = await replayImage(dockerfilePath);
  }, 420_000);
  afterAll(async () => {
    await image?.remove();
  });
  return () => {
    if (image === undefined) throw new Error('the image was not replayed');
    return image;
  };
}
