// deploy/docker/Dockerfile and .dockerignore, read as Docker would: the stages, what the final image
// holds and runs, and that it agrees with the code's defaults and the Kubernetes example.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, defaultConfig, parseConfigText } from '../../src/config/load.js';
import { REPO_ROOT } from '../support/processes.js';
import {
  copyParts,
  envOf,
  execForm,
  instructionsOf,
  isIgnored,
  parseDockerfile,
  type Stage,
} from './dockerfile.js';
import { at, DOCKERFILE, readText } from './repo-files.js';

const dockerfile = parseDockerfile(readText(DOCKERFILE));
const [buildStage, finalStage] = dockerfile.stages as [Stage, Stage];
const dockerignore = readText(join(REPO_ROOT, '.dockerignore'));
const builtIn = defaultConfig({ upstreamUrl: 'http://127.0.0.1:3000/mcp' });
const imageConfigFile = join(REPO_ROOT, 'deploy/docker/mcp-edge.yaml');

function command(keyword: 'ENTRYPOINT' | 'CMD'): string[] {
  const instruction = instructionsOf(
    finalStage ?? { base: '', name: undefined, instructions: [] },
    keyword,
  ).at(-1);
  if (instruction === undefined) throw new Error(`no ${keyword}`);
  return execForm(instruction.args);
}

const configPath = command('CMD').at(-1) ?? '';

describe('the production image (deploy/docker/Dockerfile)', () => {
  it('builds in two stages on Node 24 LTS (bookworm slim), with dev dependencies only in the build stage', () => {
    expect(dockerfile.stages).toHaveLength(2);
    for (const stage of dockerfile.stages) expect(stage.base).toBe('node:24-bookworm-slim');
    const buildRuns = instructionsOf(buildStage, 'RUN').map((run) => run.args);
    expect(buildRuns).toContain('npm ci --ignore-scripts --no-audit --no-fund');
    expect(buildRuns).toContain('npm run build');
    const finalRuns = instructionsOf(finalStage, 'RUN').map((run) => run.args);
    expect(finalRuns).toEqual(['npm ci --omit=dev --no-audit --no-fund']);
    const fromBuild = instructionsOf(finalStage, 'COPY').filter((copy) => copy.flags.from !== undefined);
    expect(fromBuild.map((copy) => [copy.flags.from, copy.args])).toEqual([
      [buildStage?.name, '/app/dist ./dist'],
    ]);
  });

  it('sends every file the build copies, and none of node_modules, dist, .git or tests', () => {
    const sources = dockerfile.stages
      .flatMap((stage) => instructionsOf(stage, 'COPY'))
      .filter((copy) => copy.flags.from === undefined)
      .flatMap((copy) => copyParts(copy).sources);
    for (const source of sources) {
      expect(existsSync(join(REPO_ROOT, source)), `${source} exists`).toBe(true);
      expect(isIgnored(dockerignore, source), `${source} reaches the build context`).toBe(false);
    }
    for (const path of [
      'node_modules/fastify/package.json',
      'dist/cli.js',
      '.git/HEAD',
      'test/unit',
      'bench/results',
    ]) {
      expect(isIgnored(dockerignore, path), `${path} stays out of the build context`).toBe(true);
    }
  });

  it('runs as a numeric non-root user, so runAsNonRoot can verify it', () => {
    const user = instructionsOf(finalStage, 'USER').at(-1)?.args ?? '';
    expect(user).toMatch(/^[1-9]\d*(:\d+)?$/);
  });

  it("exposes the code's default MCP and metrics ports", () => {
    const exposed = instructionsOf(finalStage, 'EXPOSE').flatMap((expose) =>
      expose.args.split(/\s+/).map(Number),
    );
    expect(exposed.sort()).toEqual([builtIn.listen.port, builtIn.metrics.port].sort());
  });

  it("checks /healthz on the default port with Node's own fetch (no curl in slim images)", () => {
    const healthcheck = instructionsOf(finalStage, 'HEALTHCHECK').at(-1);
    expect(healthcheck?.args).toMatch(/^CMD \[/);
    const [program, flag, script] = execForm((healthcheck?.args ?? '').replace(/^CMD\s+/, ''));
    expect([program, flag]).toEqual(['node', '-e']);
    expect(script).toContain('process.env.MCP_EDGE_HEALTHCHECK_URL');
    const url = new URL(envOf(finalStage).MCP_EDGE_HEALTHCHECK_URL ?? '');
    expect(url.hostname).toBe('127.0.0.1');
    expect(Number(url.port)).toBe(builtIn.listen.port);
    expect(url.pathname).toBe('/healthz');
  });

  it('runs the CLI with the config at /etc/mcp-edge/mcp-edge.yaml, where it ships a default', () => {
    expect(command('ENTRYPOINT')).toEqual(['node', '/app/dist/cli.js']);
    expect(command('CMD')).toEqual(['--config', '/etc/mcp-edge/mcp-edge.yaml']);
    const copies = instructionsOf(finalStage, 'COPY').map(copyParts);
    expect(copies).toContainEqual({ sources: ['deploy/docker/mcp-edge.yaml'], destination: configPath });
  });

  it('ships a default config that listens on the defaults, exposes metrics to the network, and needs an upstream', () => {
    const text = readText(imageConfigFile);
    const { config } = parseConfigText(text, imageConfigFile, { MCP_EDGE_UPSTREAM: 'http://mcp:3000/mcp' });
    expect(config.upstream.url).toBe('http://mcp:3000/mcp');
    expect(config.listen).toEqual({ ...builtIn.listen, host: '0.0.0.0' });
    expect(config.metrics).toEqual({ ...builtIn.metrics, host: '0.0.0.0' });
    expect(config.limits).toEqual(builtIn.limits);
    expect(() => parseConfigText(text, imageConfigFile, {})).toThrow(ConfigError);
    expect(() => parseConfigText(text, imageConfigFile, {})).toThrow(/MCP_EDGE_UPSTREAM is not set/);
  });

  it('declares the build script the build stage runs', () => {
    const pkg = JSON.parse(readText(join(REPO_ROOT, 'package.json'))) as unknown;
    expect(at(pkg, 'scripts', 'build')).toMatch(/^tsc -p tsconfig\.build\.json$/);
  });
});
