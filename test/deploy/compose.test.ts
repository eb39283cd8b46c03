// The local trial stack (deploy/compose): every service wired to the others and to the repository's
// files, and Prometheus' config (with the alert rules) accepted by promtool, laid out as the mounts lay it.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { REPO_ROOT } from '../support/processes.js';
import { promtool } from '../support/prometheus.js';
import { execForm, instructionsOf, parseDockerfile } from './dockerfile.js';
import { at, COMPOSE_DIR, DOCKERFILE, listAt, readText, yamlMapping } from './repo-files.js';

const compose = yamlMapping(join(COMPOSE_DIR, 'compose.yaml'));
const services = at(compose, 'services') as Record<string, unknown>;

interface BindMount {
  /** Absolute path on the host. */
  source: string;
  target: string;
  readOnly: boolean;
}

function bindMounts(service: string): BindMount[] {
  return listAt(services, service, 'volumes').map((volume) => {
    const [source = '', target = '', mode] = String(volume).split(':');
    return { source: resolve(COMPOSE_DIR, source), target, readOnly: mode === 'ro' };
  });
}

/** The host file a container path of `service` shows, through its bind mounts. */
function hostPathOf(service: string, containerPath: string): string {
  const mount = bindMounts(service)
    .filter((m) => containerPath === m.target || containerPath.startsWith(`${m.target}/`))
    .sort((a, b) => b.target.length - a.target.length)[0];
  if (mount === undefined) throw new Error(`${service}: nothing mounted at ${containerPath}`);
  return join(mount.source, containerPath.slice(mount.target.length));
}

function publishedPorts(service: string): { host: string; published: number; target: number }[] {
  const ports = (services[service] as Record<string, unknown>).ports;
  return (Array.isArray(ports) ? ports : []).map((entry: unknown) => {
    const [host = '', published = '', target = ''] = String(entry).split(':');
    return { host, published: Number(published), target: Number(target) };
  });
}

function argAfter(args: readonly string[], flag: string): string {
  return args[args.indexOf(flag) + 1] ?? '';
}

const finalStage = parseDockerfile(readText(DOCKERFILE)).stages.at(-1);
const imageConfigPath = execForm((finalStage && instructionsOf(finalStage, 'CMD').at(-1)?.args) ?? '[]').at(
  -1,
) as string;
const edgeConfig = parseConfigText(
  readText(hostPathOf('mcp-edge', imageConfigPath)),
  'compose mcp-edge.yaml',
  {},
).config;

describe('the compose trial stack (deploy/compose)', () => {
  it('starts the demo upstream, mcp-edge, Prometheus and Grafana', () => {
    expect(Object.keys(services).sort()).toEqual(['demo-upstream', 'grafana', 'mcp-edge', 'prometheus']);
  });

  it('builds both Node services from the repository with deploy/docker/Dockerfile', () => {
    for (const service of ['demo-upstream', 'mcp-edge']) {
      expect(resolve(COMPOSE_DIR, String(at(services, service, 'build', 'context')))).toBe(
        resolve(REPO_ROOT),
      );
      expect(join(REPO_ROOT, String(at(services, service, 'build', 'dockerfile')))).toBe(DOCKERFILE);
      expect(at(services, service, 'read_only')).toBe(true);
    }
  });

  it('mounts every host path that exists, read-only, and publishes ports on loopback only', () => {
    for (const service of Object.keys(services)) {
      const hasVolumes = Array.isArray((services[service] as Record<string, unknown>).volumes);
      for (const mount of hasVolumes ? bindMounts(service) : []) {
        expect(existsSync(mount.source), `${service}: ${mount.source}`).toBe(true);
        expect(mount.readOnly, `${service}: ${mount.target}`).toBe(true);
      }
      for (const port of publishedPorts(service)) expect(port.host, service).toBe('127.0.0.1');
    }
  });

  it('publishes host ports of its own, so it runs beside `npm start`, and its comments use them', () => {
    const demo = parseConfigText(
      readText(join(REPO_ROOT, 'config/demo.yaml')),
      'config/demo.yaml',
      {},
    ).config;
    const npmStartPorts = [demo.listen.port, demo.metrics.port, Number(new URL(demo.upstream.url!).port)];
    const published = Object.keys(services).flatMap((service) =>
      publishedPorts(service).map((port) => port.published),
    );
    expect(published.length).toBe(4);
    expect(new Set(published).size).toBe(published.length);
    for (const port of npmStartPorts) expect(published, `npm start uses ${port}`).not.toContain(port);
    const mentioned = [...readText(join(COMPOSE_DIR, 'compose.yaml')).matchAll(/127\.0\.0\.1:(\d+)\//g)].map(
      (match) => Number(match[1]),
    );
    expect(mentioned.length).toBeGreaterThanOrEqual(4);
    for (const port of mentioned) expect(published, `the comment's 127.0.0.1:${port}`).toContain(port);
  });

  it("mounts mcp-edge's config as a directory (so edits reload) at the path the image reads", () => {
    const mount = bindMounts('mcp-edge').find((m) => m.target === posix.dirname(imageConfigPath));
    expect(mount && statSync(mount.source).isDirectory()).toBe(true);
    expect(publishedPorts('mcp-edge').map((port) => port.target)).toEqual([
      edgeConfig.listen.port,
      edgeConfig.metrics.port,
    ]);
    expect(edgeConfig.metrics.host).toBe('0.0.0.0');
    expect(Object.keys(edgeConfig.tenants).length).toBeGreaterThanOrEqual(2);
  });

  it('points mcp-edge at the demo upstream service and the port it listens on', () => {
    const upstream = new URL(edgeConfig.upstream.url!);
    expect(upstream.hostname).toBe('demo-upstream');
    const args = listAt(services, 'demo-upstream', 'command').map(String);
    expect(listAt(services, 'demo-upstream', 'entrypoint')).toEqual(['node', '/app/dist/demo/upstream.js']);
    expect(argAfter(args, '--port')).toBe(upstream.port);
    expect(argAfter(args, '--host')).toBe('0.0.0.0');
    expect(at(services, 'mcp-edge', 'depends_on', 'demo-upstream', 'condition')).toBe('service_healthy');
  });

  it("has Prometheus scrape mcp-edge's metrics listener and load the alert rules", async () => {
    const configFile = argAfter(
      listAt(services, 'prometheus', 'command')
        .map(String)
        .flatMap((arg) => arg.split('=')),
      '--config.file',
    );
    const prometheusConfig = yamlMapping(hostPathOf('prometheus', configFile));
    const [job] = listAt(prometheusConfig, 'scrape_configs');
    expect(at(job, 'metrics_path')).toBe(edgeConfig.metrics.path);
    expect(listAt(job, 'static_configs', 0, 'targets')).toEqual([`mcp-edge:${edgeConfig.metrics.port}`]);
    const ruleFiles = listAt(prometheusConfig, 'rule_files').map((file) =>
      posix.resolve(posix.dirname(configFile), String(file)),
    );
    expect(ruleFiles.map((file) => hostPathOf('prometheus', file))).toEqual([
      join(REPO_ROOT, 'deploy/prometheus/alerts.yaml'),
    ]);

    // promtool checks the config and the rule files it names, in a folder laid out as the container sees it.
    const layout = mkdtempSync(join(tmpdir(), 'mcp-edge-compose-prometheus-'));
    for (const file of [configFile, ...ruleFiles]) {
      mkdirSync(join(layout, posix.dirname(file)), { recursive: true });
      copyFileSync(hostPathOf('prometheus', file), join(layout, file));
    }
    try {
      const { stdout } = await promtool(['check', 'config', join(layout, configFile)]);
      expect(stdout).toMatch(/SUCCESS: 10 rules found/);
    } finally {
      rmSync(layout, { recursive: true, force: true });
    }
  });

  it("provisions Grafana's datasource and dashboards from the repository, pointing at this Prometheus", () => {
    const provisioning = '/etc/grafana/provisioning';
    const datasources = yamlMapping(hostPathOf('grafana', `${provisioning}/datasources/prometheus.yaml`));
    const datasource = new URL(String(at(listAt(datasources, 'datasources')[0], 'url')));
    expect(datasource.hostname).toBe('prometheus');
    expect(publishedPorts('prometheus').map((port) => port.target)).toContain(Number(datasource.port));
    const providers = yamlMapping(hostPathOf('grafana', `${provisioning}/dashboards/mcp-edge.yaml`));
    const dashboardsPath = String(at(listAt(providers, 'providers')[0], 'options', 'path'));
    expect(existsSync(hostPathOf('grafana', `${dashboardsPath}/mcp-edge.json`))).toBe(true);
  });
});
