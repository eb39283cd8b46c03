// biome-ignore-all lint/suspicious/noTemplateCurlyInString: config text uses ${VAR} references on purpose
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  type ConfigProblem,
  defaultConfig,
  limitPolicyOf,
  loadConfigFile,
  parseConfigText,
} from '../../src/config/load.js';
import { formatEffectiveConfig } from '../../src/config/print.js';
import { BUILTIN_CEILINGS, resolveLimits } from '../../src/core/limits.js';

const MiB = 1024 * 1024;
const configDir = fileURLToPath(new URL('../../config/', import.meta.url));

/** YAML text from lines, so a line number in an assertion is the index in this list + 1. */
function yaml(...lines: string[]): string {
  return `${lines.join('\n')}\n`;
}

const UPSTREAM = ['upstream:', '  url: http://127.0.0.1:3000/mcp'];

function configErrorOf(text: string, env: Record<string, string | undefined> = {}): ConfigError {
  try {
    parseConfigText(text, 'edge.yaml', env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError, but the config loaded');
}

/** The one problem of a file that has exactly one. */
function onlyProblem(text: string, env: Record<string, string | undefined> = {}): ConfigProblem {
  const error = configErrorOf(text, env);
  expect(error.problems).toHaveLength(1);
  return error.problems[0] as ConfigProblem;
}

const SHA_A = 'a'.repeat(64);
const JWT_DEFAULTS = { claim: 'tenant', algorithms: ['RS256'], forward: true, opaqueTokens: 'ignore' };
const SHA_B = 'b'.repeat(64);

describe('valid files', () => {
  it('loads the example file, which documents every key', async () => {
    const loaded = await loadConfigFile(join(configDir, 'mcp-edge.example.yaml'), {});
    const { config } = loaded;
    expect(config.upstream.url).toBe('http://127.0.0.1:3000/mcp');
    expect(config.limits.tools.export_report?.response?.maxMessageBytes).toBe(16 * MiB);
    expect(config.limits.hardMaxBytes).toBe(64 * MiB);
    expect(config.tenancy.resolve).toHaveLength(3);
    expect(config.tenants.acme?.limits?.tools?.export_report?.response?.maxMessageBytes).toBe(0);
    expect(config.tenants.internal).toEqual({});
    expect(loaded.source).toBe(join(configDir, 'mcp-edge.example.yaml'));
    expect(loaded.sha256).toBe(createHash('sha256').update(loaded.text).digest('hex'));
  });

  it('lets the example file take its upstream from the environment', async () => {
    const loaded = await loadConfigFile(join(configDir, 'mcp-edge.example.yaml'), {
      MCP_EDGE_UPSTREAM: 'https://mcp.internal:8443/mcp',
    });
    expect(loaded.config.upstream.url).toBe('https://mcp.internal:8443/mcp');
  });

  it('loads the demo config with the listen, upstream, metrics and limits `npm start` relies on', async () => {
    const { config } = await loadConfigFile(join(configDir, 'demo.yaml'), {});
    expect(config.listen).toEqual({ host: '127.0.0.1', port: 8080, path: '/mcp' });
    expect(config.upstream.url).toBe('http://127.0.0.1:3000/mcp');
    expect(config.metrics).toMatchObject({ host: '127.0.0.1', port: 9464, path: '/metrics' });
    const policy = limitPolicyOf(config);
    expect(
      resolveLimits(policy, { tenant: 'default', method: 'tools/call', tool: 'sized' }).response
        .maxMessageBytes.value,
    ).toBe(1 * MiB);
    expect(
      resolveLimits(policy, { tenant: 'default', method: 'tools/call', tool: 'export_report' }).response
        .maxMessageBytes.value,
    ).toBe(16 * MiB);
  });

  it('fills every default around a minimal file', () => {
    const { config } = parseConfigText(yaml(...UPSTREAM), 'edge.yaml', {});
    expect(config).toEqual({
      listen: { host: '127.0.0.1', port: 8080, path: '/mcp' },
      upstream: {
        url: 'http://127.0.0.1:3000/mcp',
        timeouts: {
          connect: 10_000,
          headers: 120_000,
          body: 120_000,
          answerStream: 300_000,
          idle: 0,
          queue: 10_000,
        },
        tls: { rejectUnauthorized: true },
        maxConnections: 4096,
        maxStreamConnections: 1024,
        preserveHost: false,
        oauth: { discovery: true, paths: [] },
      },
      metrics: {
        enabled: true,
        host: '127.0.0.1',
        port: 9464,
        path: '/metrics',
        nearCeilingPercent: 80,
        tokenHistograms: true,
        toolLabels: 'all',
      },
      server: {
        allowedHosts: [],
        allowedOrigins: [],
        trustedProxies: [],
        timeouts: { requestHeaders: 30_000, requestBody: 60_000, keepAlive: 72_000, shutdownGrace: 10_000 },
        maxHeaderBytes: 16 * 1024,
        maxGetStreamsPerSession: 16,
        exposeUpstreamErrors: false,
      },
      logging: { level: 'info' },
      // The limits the file leaves out stay out: the resolver fills in the built-ins (below), and says so.
      limits: { request: {}, response: {}, methods: {}, tools: {} },
      pagination: { maxPagesPerListing: 1000 },
      tenancy: { default: 'default', requireIdentified: false, resolve: [] },
      tenants: {},
      telemetry: {
        traces: {
          exporter: 'env',
          maxQueueSize: 2048,
          maxQueueBytes: 8 * 1024 * 1024,
          maxExportBatchSize: 512,
          scheduledDelay: 5_000,
          exportTimeout: 10_000,
          maxRequestSpans: 100,
        },
      },
    });
    const limits = resolveLimits(limitPolicyOf(config), { tenant: 'default', method: 'tools/call' });
    expect(limits.mode).toEqual({ value: 'enforce', source: 'built-in default' });
    expect(limits.request.maxBodyBytes).toEqual({
      value: BUILTIN_CEILINGS['request.maxBodyBytes'],
      source: 'built-in default',
    });
    expect(limits.response.maxMessageBytes).toEqual({
      value: BUILTIN_CEILINGS['response.maxMessageBytes'],
      source: 'built-in default',
    });
    expect(limits.response.toolCallRefusal).toEqual({ value: 'error', source: 'built-in default' });
  });

  it('normalizes sizes, durations, header names, CIDRs, origins, hosts and key hashes', () => {
    const { config } = parseConfigText(
      yaml(
        ...UPSTREAM,
        '  timeouts: { connect: 250ms, headers: 2m, idle: 1h }',
        'server:',
        '  allowedHosts: [MCP.Example.com, "localhost:8080"]',
        '  allowedOrigins: ["HTTPS://App.Example.com", "http://localhost:6274"]',
        '  maxHeaderBytes: 32KB',
        '  trustedProxies: [10.0.0.0/8, 192.168.1.7, "::1"]',
        'limits:',
        '  request: { maxBodyBytes: 1.5MB, maxMessageBytes: 65536 }',
        '  response: { maxMessageBytes: 0 }',
        'tenancy:',
        '  resolve:',
        '    - header: X-Tenant-Id',
        '      trustedProxies: [10.0.0.0/8, 192.168.1.7, "::1", "fd00::/8"]',
        '    - apiKey:',
        '        bearer: true',
        `        tenants: { acme: [${SHA_A.toUpperCase()}] }`,
        '    - jwt: { secret: "0123456789abcdef0123456789abcdef" }',
        'tenants:',
        '  acme:',
      ),
      'edge.yaml',
      {},
    );
    expect(config.upstream.timeouts).toEqual({
      connect: 250,
      headers: 120_000,
      body: 120_000,
      answerStream: 300_000,
      idle: 3_600_000,
      queue: 10_000,
    });
    expect(config.server.allowedHosts).toEqual(['mcp.example.com', 'localhost:8080']);
    expect(config.server.allowedOrigins).toEqual(['https://app.example.com', 'http://localhost:6274']);
    expect(config.server.maxHeaderBytes).toBe(32_000);
    expect(config.server.trustedProxies).toEqual(['10.0.0.0/8', '192.168.1.7/32', '::1/128']);
    expect(config.limits.request).toEqual({ maxBodyBytes: 1_500_000, maxMessageBytes: 65_536 });
    expect(config.limits.response.maxMessageBytes).toBe(0);
    expect(config.tenancy.resolve).toEqual([
      { header: 'x-tenant-id', trustedProxies: ['10.0.0.0/8', '192.168.1.7/32', '::1/128', 'fd00::/8'] },
      { apiKey: { header: 'authorization', bearer: true, tenants: { acme: [SHA_A] } } },
      {
        jwt: {
          secret: '0123456789abcdef0123456789abcdef',
          claim: 'tenant',
          algorithms: ['HS256'],
          forward: true,
          opaqueTokens: 'ignore',
        },
      },
    ]);
    // `acme:` with nothing under it declares a tenant with no limits of its own.
    expect(config.tenants).toEqual({ acme: {} });
  });

  it('resolves relative file paths against the config file, and leaves URLs alone', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mcp-edge-config-'));
    try {
      const file = join(dir, 'edge.yaml');
      await writeFile(
        file,
        yaml(
          ...UPSTREAM,
          '  tls: { ca: certs/ca.pem }',
          'tenancy:',
          '  resolve:',
          '    - jwt: { jwks: keys/jwks.json }',
          '    - jwt: { jwks: "https://auth.example.com/jwks.json" }',
        ),
      );
      const { config } = await loadConfigFile(file, {});
      expect(config.upstream.tls.ca).toBe(join(dir, 'certs/ca.pem'));
      expect(config.tenancy.resolve).toEqual([
        { jwt: { jwks: join(dir, 'keys/jwks.json'), ...JWT_DEFAULTS } },
        { jwt: { jwks: 'https://auth.example.com/jwks.json', ...JWT_DEFAULTS } },
      ]);
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it('gives the resolver the config paths of the values it picks', () => {
    const { config } = parseConfigText(
      yaml(
        ...UPSTREAM,
        'limits:',
        '  methods:',
        '    tools/list: { response: { maxMessageBytes: 512KiB } }',
        'tenants:',
        '  acme:',
        '    limits:',
        '      tools:',
        '        export: { response: { maxMessageBytes: 16MiB } }',
      ),
      'edge.yaml',
      {},
    );
    const policy = limitPolicyOf(config);
    expect(
      resolveLimits(policy, { tenant: 'acme', method: 'tools/call', tool: 'export' }).response
        .maxMessageBytes,
    ).toEqual({
      value: 16 * MiB,
      source: 'tenants.acme.limits.tools.export.response.maxMessageBytes',
    });
    expect(resolveLimits(policy, { tenant: 'acme', method: 'tools/list' }).response.maxMessageBytes).toEqual({
      value: 512 * 1024,
      source: 'limits.methods.tools/list.response.maxMessageBytes',
    });
  });
});

describe('invalid files name the key path and the line', () => {
  it('formats a problem as <file>:<line>:<col>: <key.path>: <reason>', () => {
    const error = configErrorOf(yaml(...UPSTREAM, 'limits:', '  response:', '    maxMessageBytes: 4 mb'));
    expect(error.message).toBe(
      'edge.yaml:5:22: limits.response.maxMessageBytes: "4 mb" is not a size; use bytes or a number with B, KB, MB, GB, KiB, MiB, GiB',
    );
    expect(error).toMatchObject({
      file: 'edge.yaml',
      keyPath: 'limits.response.maxMessageBytes',
      line: 5,
      column: 22,
    });
  });

  it('refuses a bad size in a flow mapping, pointing at the value', () => {
    const problem = onlyProblem(
      yaml(...UPSTREAM, 'limits:', '  tools:', '    big: { response: { maxMessageBytes: 1e3 } }'),
    );
    expect(problem).toEqual({
      keyPath: 'limits.tools.big.response.maxMessageBytes',
      line: 5,
      column: 41,
      reason: '"1e3" is not a size; use bytes or a number with B, KB, MB, GB, KiB, MiB, GiB',
    });
  });

  it('refuses a size under a minimum', () => {
    const problem = onlyProblem(yaml(...UPSTREAM, 'server:', '  maxHeaderBytes: 100'));
    expect(problem).toMatchObject({
      keyPath: 'server.maxHeaderBytes',
      line: 4,
      reason: 'must be at least 1 KiB',
    });
  });

  it('refuses a duration without a unit', () => {
    const problem = onlyProblem(
      yaml('upstream:', '  url: http://127.0.0.1:3000/mcp', '  timeouts:', '    connect: 30'),
    );
    expect(problem).toMatchObject({ keyPath: 'upstream.timeouts.connect', line: 4, column: 14 });
    expect(problem.reason).toContain('30 is not a duration; a unit is required');
  });

  it('refuses an unknown key (a typo) and suggests the known one', () => {
    const problem = onlyProblem(yaml(...UPSTREAM, 'limits:', '  respone:', '    maxMessageBytes: 1MiB'));
    expect(problem).toEqual({
      keyPath: 'limits.respone',
      line: 4,
      column: 3,
      reason: 'unknown key "respone"; did you mean "response"?',
    });
  });

  it('refuses an unknown top-level key and lists what is allowed when nothing is close', () => {
    const problem = onlyProblem(yaml(...UPSTREAM, 'frobnicate: true'));
    expect(problem).toMatchObject({ keyPath: 'frobnicate', line: 3, column: 1 });
    expect(problem.reason).toBe(
      'unknown key "frobnicate"; allowed here: listen, upstream, metrics, server, logging, limits, pagination, tenancy, tenants, hosts, hostBudgets, telemetry, quotas',
    );
  });

  it('refuses hardMaxBytes in a tenant layer: the cap is global', () => {
    const problem = onlyProblem(
      yaml(...UPSTREAM, 'tenants:', '  acme:', '    limits: { hardMaxBytes: 1GiB }'),
    );
    expect(problem).toMatchObject({ keyPath: 'tenants.acme.limits.hardMaxBytes', line: 5, column: 15 });
  });

  it('refuses wrong types', () => {
    const error = configErrorOf(
      yaml(
        ...UPSTREAM,
        'listen:',
        '  port: eighty',
        'tenancy:',
        '  requireIdentified: "yes"',
        'limits:',
        '  mode: strict',
      ),
    );
    expect(error.problems).toEqual([
      {
        keyPath: 'listen.port',
        line: 4,
        column: 9,
        reason: 'expected a port number (an integer 0..65535), got "eighty"',
      },
      {
        keyPath: 'tenancy.requireIdentified',
        line: 6,
        column: 22,
        reason: 'expected true or false, got "yes"',
      },
      {
        keyPath: 'limits.mode',
        line: 8,
        column: 9,
        reason: 'expected one of enforce, observe; got "strict"',
      },
    ]);
  });

  it('refuses a mapping where a scalar belongs, pointing at its key', () => {
    const problem = onlyProblem(yaml(...UPSTREAM, 'listen:', '  host:', '    name: example'));
    expect(problem).toEqual({
      keyPath: 'listen.host',
      line: 4,
      column: 3,
      reason: 'expected a string, got a mapping',
    });
  });

  it('refuses ports out of range and paths without a leading slash', () => {
    const error = configErrorOf(yaml(...UPSTREAM, 'listen: { port: 70000, path: mcp }'));
    expect(error.problems.map((p) => [p.keyPath, p.line, p.column])).toEqual([
      ['listen.port', 3, 17],
      ['listen.path', 3, 30],
    ]);
  });

  it('refuses a missing upstream.url, pointing at upstream', () => {
    const problem = onlyProblem(yaml('listen: { port: 8080 }', 'upstream:', '  timeouts: { connect: 5s }'));
    expect(problem).toEqual({ keyPath: 'upstream.url', line: 2, column: 1, reason: 'is required' });
  });

  it('refuses a file without upstream at all, with no line to point at', () => {
    const error = configErrorOf(yaml('listen: { port: 8080 }'));
    expect(error.message).toBe('edge.yaml: upstream: is required');
    expect(error.line).toBeUndefined();
  });

  it('refuses an empty file: upstream is required', () => {
    expect(configErrorOf('').message).toBe('edge.yaml: upstream: is required');
  });

  it.each([['ftp://example.com/mcp'], ['127.0.0.1:3000/mcp'], ['/mcp']])(
    'refuses the upstream URL %s',
    (url) => {
      const problem = onlyProblem(yaml('upstream:', `  url: "${url}"`));
      expect(problem).toEqual({
        keyPath: 'upstream.url',
        line: 2,
        column: 8,
        reason: 'expected an absolute http:// or https:// URL',
      });
    },
  );

  it('refuses bad CIDR ranges, each at its own line', () => {
    const error = configErrorOf(
      yaml(
        ...UPSTREAM,
        'tenancy:',
        '  resolve:',
        '    - header: x-tenant-id',
        '      trustedProxies:',
        '        - 127.0.0.0/8',
        '        - 10.0.0.0/33',
        '        - "::1/129"',
        '        - localhost',
        '        - 1.2.3.4/8/9',
      ),
    );
    expect(error.problems).toEqual([
      {
        keyPath: 'tenancy.resolve[0].trustedProxies[1]',
        line: 8,
        column: 11,
        reason: '"10.0.0.0/33" has an invalid prefix length; IPv4 prefixes are 0..32',
      },
      {
        keyPath: 'tenancy.resolve[0].trustedProxies[2]',
        line: 9,
        column: 11,
        reason: '"::1/129" has an invalid prefix length; IPv6 prefixes are 0..128',
      },
      {
        keyPath: 'tenancy.resolve[0].trustedProxies[3]',
        line: 10,
        column: 11,
        reason: '"localhost" is not a CIDR range; write e.g. 10.0.0.0/8, 127.0.0.1 or ::1/128',
      },
      {
        keyPath: 'tenancy.resolve[0].trustedProxies[4]',
        line: 11,
        column: 11,
        reason: '"1.2.3.4/8/9" is not a CIDR range; write e.g. 10.0.0.0/8, 127.0.0.1 or ::1/128',
      },
    ]);
  });

  it('refuses a bad CIDR range in server.trustedProxies; the default is to trust no peer', () => {
    const problem = onlyProblem(
      yaml(...UPSTREAM, 'server:', '  trustedProxies: [10.0.0.0/8, "10.0.0.0/33"]'),
    );
    expect(problem).toMatchObject({ keyPath: 'server.trustedProxies[1]', line: 4 });
    expect(problem.reason).toContain('invalid prefix length');
    expect(parseConfigText(yaml(...UPSTREAM), 'edge.yaml', {}).config.server.trustedProxies).toEqual([]);
  });

  it('refuses upstream credentials that cannot be sent as Basic authentication', () => {
    const problem = onlyProblem(yaml('upstream:', '  url: "http://us%3Aer:pw@127.0.0.1:3000/mcp"'));
    expect(problem).toMatchObject({ keyPath: 'upstream.url' });
    expect(problem.reason).toContain('Basic');
    expect(problem.reason).not.toContain('pw');
  });

  it('requires trustedProxies for a header resolver', () => {
    const problem = onlyProblem(yaml(...UPSTREAM, 'tenancy:', '  resolve:', '    - header: x-tenant-id'));
    expect(problem).toMatchObject({ keyPath: 'tenancy.resolve[0].trustedProxies', line: 5, column: 7 });
    expect(problem.reason).toContain('a tenant header is trusted only from listed proxies');
  });

  it('refuses a bad tenant id, pointing at the key', () => {
    const problem = onlyProblem(
      yaml(...UPSTREAM, 'tenants:', '  ok: {}', '  "acme corp":', '    limits: { mode: observe }'),
    );
    expect(problem).toEqual({
      keyPath: 'tenants.acme corp',
      line: 5,
      column: 3,
      reason: 'invalid name "acme corp": a tenant id is 1 to 64 characters of A-Z, a-z, 0-9, "_", "." or "-"',
    });
  });

  it('refuses names that would collide with JavaScript object machinery', () => {
    const problem = onlyProblem(
      yaml(...UPSTREAM, 'limits:', '  tools:', '    __proto__: { response: { maxMessageBytes: 1 } }'),
    );
    expect(problem).toMatchObject({ keyPath: 'limits.tools.__proto__', line: 5, column: 5 });
    expect(problem.reason).toContain('reserved');
  });

  it('refuses references to tenants that are not defined', () => {
    const error = configErrorOf(
      yaml(
        ...UPSTREAM,
        'tenancy:',
        '  default: guests',
        '  resolve:',
        '    - apiKey:',
        '        tenants:',
        `          acme: [${SHA_A}]`,
        `          globex: [${SHA_B}]`,
        'tenants:',
        '  acme: {}',
      ),
    );
    expect(error.problems).toEqual([
      {
        keyPath: 'tenancy.default',
        line: 4,
        column: 12,
        reason: 'tenant "guests" is not defined under tenants',
      },
      {
        keyPath: 'tenancy.resolve[0].apiKey.tenants.globex',
        line: 9,
        column: 19,
        reason: 'tenant "globex" is not defined under tenants',
      },
    ]);
  });

  it('refuses hostBudgets for a tenant that is not defined (a typo would leave the tenant on the default)', () => {
    const problem = onlyProblem(
      yaml(
        ...UPSTREAM,
        'hostBudgets:',
        '  tenants:',
        '    default: { action: refuse }',
        '    acme: { action: refuse }',
        '    acme-typo: { action: refuse }',
        'tenants:',
        '  acme: {}',
      ),
    );
    expect(problem).toMatchObject({
      keyPath: 'hostBudgets.tenants.acme-typo',
      line: 7,
      reason: 'tenant "acme-typo" is not defined under tenants',
    });
  });

  it('accepts the implicit tenant "default" without an entry', () => {
    expect(
      parseConfigText(yaml(...UPSTREAM, 'tenancy: { default: default }'), 'edge.yaml', {}).config.tenancy
        .default,
    ).toBe('default');
  });

  it('refuses a key hash listed for two tenants', () => {
    const problem = onlyProblem(
      yaml(
        ...UPSTREAM,
        'tenancy:',
        '  resolve:',
        '    - apiKey:',
        '        tenants:',
        '          acme:',
        `            - ${SHA_A}`,
        '          globex:',
        `            - ${SHA_A}`,
        'tenants: { acme: {}, globex: {} }',
      ),
    );
    expect(problem).toMatchObject({
      keyPath: 'tenancy.resolve[0].apiKey.tenants.globex[0]',
      line: 10,
      column: 15,
    });
    expect(problem.reason).toContain('already listed for tenant "acme"');
  });

  it('refuses a key that is not a SHA-256 hash', () => {
    const problem = onlyProblem(
      yaml(
        ...UPSTREAM,
        'tenancy:',
        '  resolve:',
        '    - apiKey: { tenants: { acme: [sk-live-123] } }',
        'tenants: { acme: {} }',
      ),
    );
    expect(problem).toEqual({
      keyPath: 'tenancy.resolve[0].apiKey.tenants.acme[0]',
      line: 5,
      column: 35,
      reason: 'expected the SHA-256 of the key as 64 hex digits',
    });
  });

  it('refuses a resolver item with two kinds', () => {
    const problem = onlyProblem(
      yaml(
        ...UPSTREAM,
        'tenancy:',
        '  resolve:',
        '    - header: x-tenant-id',
        '      trustedProxies: [127.0.0.0/8]',
        '      jwt: { jwks: "https://auth.example.com/jwks.json" }',
      ),
    );
    expect(problem).toEqual({
      keyPath: 'tenancy.resolve[0]',
      line: 5,
      column: 7,
      reason:
        'a resolver is exactly one of header, apiKey or jwt, not header and jwt; write one list item each',
    });
  });

  it('refuses a jwt resolver with both or neither of jwks and secret, a short secret, or mismatched algorithms', () => {
    const error = configErrorOf(
      yaml(
        ...UPSTREAM,
        'tenancy:',
        '  resolve:',
        '    - jwt: { jwks: keys.json, secret: "0123456789abcdef0123456789abcdef" }',
        '    - jwt: { claim: tenant }',
        '    - jwt: { secret: "${SECRET}" }',
        '    - jwt: { jwks: keys.json, algorithms: [RS256, HS256] }',
      ),
      { SECRET: 'short' },
    );
    expect(error.problems.map(({ keyPath, line, reason }) => ({ keyPath, line, reason }))).toEqual([
      {
        keyPath: 'tenancy.resolve[0].jwt',
        line: 5,
        reason: 'set exactly one of jwks (public keys) or secret (HMAC)',
      },
      {
        keyPath: 'tenancy.resolve[1].jwt',
        line: 6,
        reason: 'set exactly one of jwks (public keys) or secret (HMAC)',
      },
      {
        keyPath: 'tenancy.resolve[2].jwt.secret',
        line: 7,
        reason: 'an HMAC secret must be at least 32 bytes',
      },
      {
        keyPath: 'tenancy.resolve[3].jwt.algorithms[1]',
        line: 8,
        reason: 'HS256 cannot be verified with jwks',
      },
    ]);
  });

  it('refuses metrics on the same port as the MCP listener', () => {
    const problem = onlyProblem(yaml(...UPSTREAM, 'listen: { port: 9000 }', 'metrics: { port: 9000 }'));
    expect(problem).toMatchObject({
      keyPath: 'metrics.port',
      line: 4,
      column: 18,
      reason: 'must differ from listen.port',
    });
  });

  it('reports every problem at once, top to bottom', () => {
    const error = configErrorOf(
      yaml(
        'upstream:',
        '  url: http://127.0.0.1:3000/mcp',
        '  timeouts: { connect: 5 }',
        'limits:',
        '  request: { maxBodyBytes: 4M }',
        '  tols: {}',
      ),
    );
    expect(error.problems.map((p) => `${p.line}:${p.column} ${p.keyPath}`)).toEqual([
      '3:24 upstream.timeouts.connect',
      '5:28 limits.request.maxBodyBytes',
      '6:3 limits.tols',
    ]);
    expect(error.message.split('\n')).toHaveLength(3);
    expect(error.message.split('\n')[2]).toBe(
      'edge.yaml:6:3: limits.tols: unknown key "tols"; did you mean "tools"?',
    );
  });

  it('turns a YAML syntax error into a ConfigError with line and column', () => {
    const problem = onlyProblem(
      yaml(...UPSTREAM, 'limits:', '  request: { maxBodyBytes: 4MiB', 'tenants: {}'),
    );
    expect(problem.line).toBe(5);
    expect(problem.column).toBe(1);
    expect(problem.reason).toMatch(/^YAML syntax: /);
  });

  it('refuses a duplicate key, naming its path and line', () => {
    const problem = onlyProblem(
      yaml(
        ...UPSTREAM,
        'limits:',
        '  response: { maxMessageBytes: 1MiB }',
        '  response: { maxMessageBytes: 2MiB }',
      ),
    );
    expect(problem).toEqual({ keyPath: 'limits.response', line: 5, column: 3, reason: 'duplicate key' });
  });

  it('refuses several YAML documents in one file', () => {
    const problem = onlyProblem(yaml(...UPSTREAM, '---', ...UPSTREAM));
    expect(problem.line).toBe(3);
    expect(problem.reason).toContain('multiple documents');
  });

  it('refuses a file that is not a mapping', () => {
    expect(configErrorOf(yaml('- a', '- b')).message).toBe('edge.yaml:1:1: expected a mapping, got a list');
  });
});

describe('environment variables', () => {
  it('replaces ${VAR} and ${VAR:-fallback} in values, and $${ is a literal ${', () => {
    const { config } = parseConfigText(
      yaml(
        'upstream:',
        '  url: ${UPSTREAM}',
        'listen:',
        '  host: ${HOST:-127.0.0.1}',
        '  port: ${PORT}',
        '  path: /mcp-${STAGE:-dev}',
        'tenancy:',
        '  default: ${TENANT:-acme}',
        '  resolve:',
        '    - jwt:',
        '        secret: "${JWT_SECRET}"',
        '        issuer: "$${not-a-variable}"',
        'tenants: { acme: {} }',
      ),
      'edge.yaml',
      {
        UPSTREAM: 'http://10.0.0.5:3000/mcp',
        PORT: '8443',
        STAGE: '',
        JWT_SECRET: '12345678901234567890123456789012',
      },
    );
    expect(config.upstream.url).toBe('http://10.0.0.5:3000/mcp');
    // An unquoted value is typed as YAML would type the text in its place; `:-` also covers an empty variable.
    expect(config.listen).toEqual({ host: '127.0.0.1', port: 8443, path: '/mcp-dev' });
    expect(config.tenancy.default).toBe('acme');
    const jwt = config.tenancy.resolve[0];
    // A quoted value stays a string, even when it is all digits.
    expect(jwt).toMatchObject({
      jwt: { secret: '12345678901234567890123456789012', issuer: '${not-a-variable}' },
    });
  });

  it('never interpolates keys', () => {
    const problem = onlyProblem(yaml(...UPSTREAM, 'limits:', '  ${KEY}: enforce'), { KEY: 'mode' });
    expect(problem).toMatchObject({ keyPath: 'limits.${KEY}', line: 4, column: 3 });
  });

  it('refuses an unset variable without a fallback, naming the key and the line', () => {
    const error = configErrorOf(
      yaml(
        'upstream:',
        '  url: http://127.0.0.1:3000/mcp',
        'tenancy:',
        '  resolve:',
        '    - jwt: { secret: "${JWT_SECRET}" }',
      ),
      {},
    );
    expect(error.message).toBe(
      'edge.yaml:5:22: tenancy.resolve[0].jwt.secret: environment variable JWT_SECRET is not set (write ${JWT_SECRET:-fallback} to give a default)',
    );
  });

  it('refuses a malformed reference', () => {
    const problem = onlyProblem(yaml('upstream:', '  url: http://${HOST/mcp'), { HOST: 'x' });
    expect(problem).toMatchObject({ keyPath: 'upstream.url', line: 2, column: 8 });
    expect(problem.reason).toContain('write $${ for a literal');
  });

  it('reads process.env when no environment is given', () => {
    const name = 'MCP_EDGE_CONFIG_TEST_UPSTREAM';
    process.env[name] = 'http://127.0.0.1:4999/mcp';
    try {
      expect(parseConfigText(yaml('upstream:', `  url: \${${name}}`), 'edge.yaml').config.upstream.url).toBe(
        'http://127.0.0.1:4999/mcp',
      );
    } finally {
      delete process.env[name];
    }
  });
});

describe('files', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mcp-edge-config-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true });
  });

  it('turns a missing file into a ConfigError with an empty key path', async () => {
    const path = join(dir, 'missing.yaml');
    const error = await loadConfigFile(path, {}).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({
      file: path,
      keyPath: '',
      line: undefined,
      message: `${path}: file not found`,
    });
  });

  it('refuses a file that is not UTF-8', async () => {
    const path = join(dir, 'latin1.yaml');
    await writeFile(path, Buffer.from([0x75, 0x70, 0x3a, 0x20, 0xe9, 0x0a]));
    await expect(loadConfigFile(path, {})).rejects.toThrow(`${path}: the file is not valid UTF-8`);
  });

  it('names the file in every problem and hashes its bytes', async () => {
    const path = join(dir, 'edge.yaml');
    const text = yaml(...UPSTREAM, 'limits: { mode: observe }');
    await writeFile(path, text);
    const loaded = await loadConfigFile(path, {});
    expect(loaded.sha256).toBe(createHash('sha256').update(text).digest('hex'));
    expect(loaded.text).toBe(text);
    await writeFile(path, yaml(...UPSTREAM, 'limits: { mode: observ }'));
    await expect(loadConfigFile(path, {})).rejects.toThrow(
      `${path}:3:17: limits.mode: expected one of enforce, observe`,
    );
  });
});

describe('defaultConfig', () => {
  it('is the built-in config around one upstream', () => {
    const config = defaultConfig({ upstreamUrl: 'http://127.0.0.1:3000/mcp', port: 0 });
    expect(config.upstream.url).toBe('http://127.0.0.1:3000/mcp');
    expect(config.listen).toEqual({ host: '127.0.0.1', port: 0, path: '/mcp' });
    expect(resolveLimits(limitPolicyOf(config), { tenant: 'default' }).response.maxMessageBytes.value).toBe(
      BUILTIN_CEILINGS['response.maxMessageBytes'],
    );
    expect(defaultConfig({ upstreamUrl: 'https://x.example/mcp' }).listen.port).toBe(8080);
  });

  it('names the flag when the URL is bad', () => {
    expect(() => defaultConfig({ upstreamUrl: 'localhost:3000' })).toThrow(
      '<command line>: --upstream: expected an absolute http:// or https:// URL',
    );
  });
});

describe('formatEffectiveConfig', () => {
  const secret = 'super-secret-value-that-is-long-enough';
  const text = yaml(
    'upstream:',
    '  url: http://user:pw@127.0.0.1:3000/mcp',
    'tenancy:',
    '  resolve:',
    `    - jwt: { secret: "${secret}" }`,
    `    - apiKey: { tenants: { acme: [${SHA_A}, ${SHA_B}] } }`,
    'limits:',
    '  response: { maxMessageBytes: 0 }',
    'tenants: { acme: {} }',
  );

  it('shows the normalized config with secrets redacted and sizes in readable units', () => {
    const printed = formatEffectiveConfig(parseConfigText(text, 'edge.yaml', {}));
    expect(printed).not.toContain(secret);
    // Key hashes are one-way digests the file holds already: shown, so the printout loads back.
    expect(printed).toContain(SHA_A);
    expect(printed).not.toContain(':pw@');
    expect(printed).toContain('secret: <redacted>');
    expect(printed).not.toContain('user');
    expect(printed).toContain('url: http://<redacted>@127.0.0.1:3000/mcp');
    expect(printed).toContain('maxBodyBytes: 4194304 # 4 MiB');
    expect(printed).toContain('maxMessageBytes: 0 # no ceiling');
    expect(printed).toContain('connect: 10s');
    expect(printed).toMatch(/^# Effective config of edge\.yaml \(sha256 [0-9a-f]{64}\)/);
  });

  it('prints a config that loads back to the same config when it holds no secrets', () => {
    const loaded = parseConfigText(
      yaml(
        ...UPSTREAM,
        '  timeouts: { connect: 1500ms, idle: 5m }',
        'limits:',
        '  tools: { big: { response: { maxMessageBytes: 1.5MB } } }',
      ),
      'edge.yaml',
      {},
    );
    const reloaded = parseConfigText(formatEffectiveConfig(loaded), 'printed.yaml', {});
    expect(reloaded.config).toEqual(loaded.config);
  });
});

describe('server.publicUrl, server.cors and upstream.oauth', () => {
  it('normalizes them and fills the CORS defaults', () => {
    const { config } = parseConfigText(
      yaml(
        ...UPSTREAM,
        '  oauth: { paths: [/authorize, /token] }',
        'server:',
        '  publicUrl: HTTPS://MCP.Example.com:443',
        '  allowedOrigins: ["https://app.example.com"]',
        '  cors: { allowedOrigins: ["HTTPS://App.Example.com"], allowedHeaders: [Content-Type, mcp-param-*], maxAge: 2h }',
      ),
      'edge.yaml',
      {},
    );
    expect(config.upstream.oauth).toEqual({ discovery: true, paths: ['/authorize', '/token'] });
    expect(config.server.publicUrl).toBe('https://mcp.example.com');
    expect(config.server.cors).toEqual({
      allowedOrigins: ['https://app.example.com'],
      methods: ['POST', 'GET', 'DELETE'],
      allowedHeaders: ['content-type', 'mcp-param-*'],
      exposedHeaders: ['mcp-session-id', 'www-authenticate', 'x-request-id'],
      maxAge: 7_200_000,
    });
    const defaults = parseConfigText(
      yaml(...UPSTREAM, 'server: { cors: { allowedOrigins: ["*"] } }'),
      'e',
      {},
    );
    expect(defaults.config.server.cors?.allowedHeaders).toEqual([
      'content-type',
      'authorization',
      'mcp-session-id',
      'mcp-protocol-version',
      'last-event-id',
      'mcp-method',
      'mcp-name',
    ]);
    expect(defaults.config.server.cors?.maxAge).toBe(600_000);
    expect(formatEffectiveConfig(defaults)).toContain('maxAge: 10m');
  });

  it('refuses a publicUrl with a path, and an empty CORS origin list', () => {
    expect(
      onlyProblem(yaml(...UPSTREAM, 'server: { publicUrl: "https://mcp.example.com/mcp" }')),
    ).toMatchObject({
      keyPath: 'server.publicUrl',
      reason:
        '"https://mcp.example.com/mcp" is not a public origin; write scheme://host[:port] (the MCP path is listen.path)',
    });
    expect(onlyProblem(yaml(...UPSTREAM, 'server: { cors: { allowedOrigins: [] } }'))).toMatchObject({
      keyPath: 'server.cors.allowedOrigins',
    });
  });

  it('refuses a CORS origin that server.allowedOrigins would refuse with 403', () => {
    const problems = configErrorOf(
      yaml(
        ...UPSTREAM,
        'server:',
        '  allowedOrigins: ["https://app.example.com"]',
        '  cors: { allowedOrigins: ["https://app.example.com", "https://other.example.com", "*"] }',
      ),
    ).problems;
    expect(problems.map((p) => [p.keyPath, p.reason])).toEqual([
      [
        'server.cors.allowedOrigins[1]',
        '"https://other.example.com" is not in server.allowedOrigins, so its requests would be refused with 403; add it there too',
      ],
      [
        'server.cors.allowedOrigins[2]',
        '"*" would grant CORS to origins that server.allowedOrigins refuses with 403; list the origins',
      ],
    ]);
  });

  it('refuses OAuth pass-through paths that overlap what the edge serves itself', () => {
    const problems = configErrorOf(
      yaml(...UPSTREAM, '  oauth: { paths: [/mcp, /mcp/token, /healthz, /.well-known/x, /, /a/../b, /ok/] }'),
    ).problems;
    expect(problems.map((p) => p.keyPath)).toEqual([
      'upstream.oauth.paths[0]',
      'upstream.oauth.paths[1]',
      'upstream.oauth.paths[2]',
      'upstream.oauth.paths[3]',
      'upstream.oauth.paths[4]', // not a path of segments
      'upstream.oauth.paths[4]', // and it would shadow everything
      'upstream.oauth.paths[5]',
      'upstream.oauth.paths[6]',
    ]);
    expect(problems[0]?.reason).toBe('"/mcp" overlaps "/mcp", which mcp-edge serves itself');
  });
});
