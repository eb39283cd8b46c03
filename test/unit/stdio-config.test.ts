// upstream.stdio in the config contract: exactly one of url and stdio (the error names the line), an argv
// list, defaults, the child's environment, and how check-config and explain show it without its secrets.
import { describe, expect, it } from 'vitest';
import { ConfigError, defaultConfig, parseConfigText } from '../../src/config/load.js';
import { formatEffectiveConfig } from '../../src/config/print.js';
import { describeUpstream } from '../../src/upstream/select.js';
import { childEnvironment, processesPerTenant } from '../../src/upstream/stdio-upstream.js';

function problemsOf(text: string): ConfigError['problems'] {
  try {
    parseConfigText(text, 'edge.yaml', { TOKEN: 's3cret-token' });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError, but the config loaded');
}

const STDIO = ['upstream:', '  stdio:', '    command: [node, server.js, --flag]'];

describe('upstream.stdio', () => {
  it('loads with its defaults', () => {
    const { config } = parseConfigText(STDIO.join('\n'), 'edge.yaml', {});
    expect(config.upstream.url).toBeUndefined();
    expect(config.upstream.stdio).toEqual({
      command: ['node', 'server.js', '--flag'],
      env: {},
      idleTimeout: 15 * 60_000,
      idleTimeoutBeforeFirstRequest: 60_000,
      idleTimeoutWithoutStream: 60_000,
      maxProcesses: 64,
      killGrace: 5000,
      jsonResponse: false,
      idWait: 5000,
      streamWait: 5000,
      streamWaitBytes: 256 * 1024,
    });
  });

  it('refuses url and stdio together, pointing at the stdio line', () => {
    const problems = problemsOf(
      ['upstream:', '  url: http://127.0.0.1:3000/mcp', ...STDIO.slice(1)].join('\n'),
    );
    expect(problems).toEqual([
      {
        keyPath: 'upstream.stdio',
        line: 3,
        column: 3,
        reason: 'upstream.url and upstream.stdio exclude each other: give exactly one of them',
      },
    ]);
  });

  it('refuses a command that is a shell line rather than an argv list, or an empty one', () => {
    const shellLine = problemsOf(['upstream:', '  stdio:', '    command: "npx -y server"'].join('\n'));
    expect(shellLine[0]).toMatchObject({ keyPath: 'upstream.stdio.command', line: 3 });
    expect(shellLine[0]?.reason).toContain('argv list');
    const empty = problemsOf(['upstream:', '  stdio:', '    command: []'].join('\n'));
    expect(empty[0]).toMatchObject({
      keyPath: 'upstream.stdio.command',
      reason: 'must list at least 1',
    });
  });

  it('gives the child only the listed environment plus PATH and HOME; check-config and explain never show values or arguments', () => {
    const text = [...STDIO, `    env: { API_TOKEN: "\${TOKEN}", MODE: ro }`].join('\n');
    const loaded = parseConfigText(text, 'edge.yaml', { TOKEN: 's3cret-token' });
    const stdio = loaded.config.upstream.stdio!;
    expect(
      childEnvironment(stdio, { PATH: '/bin', HOME: '/home/x', AWS_SECRET_ACCESS_KEY: 'edge-own' }),
    ).toEqual({
      PATH: '/bin',
      HOME: '/home/x',
      API_TOKEN: 's3cret-token',
      MODE: 'ro',
    });
    const printed = formatEffectiveConfig(loaded);
    expect(printed).toContain('API_TOKEN: <redacted>');
    expect(printed).not.toContain('s3cret-token');
    const described = describeUpstream(loaded.config);
    expect(described).toBe(
      'stdio server "node" (2 argument(s); env: API_TOKEN, MODE; one process per session, at most 64)',
    );
    expect(described).not.toContain('server.js');
  });

  it('maxProcessesPerTenant: as given; by default half of maxProcesses, or all of them with one tenant (no tenancy.resolve)', () => {
    const perTenant = (...lines: string[]) =>
      processesPerTenant(parseConfigText([...STDIO, ...lines].join('\n'), 'edge.yaml', {}).config);
    const apiKeys = [
      `tenancy: { resolve: [ { apiKey: { tenants: { acme: ["${'a'.repeat(64)}"] } } } ] }`,
      'tenants: { acme: {} }',
    ];
    expect(perTenant()).toBe(64);
    expect(perTenant('    maxProcesses: 7')).toBe(7);
    expect(perTenant(...apiKeys)).toBe(32);
    expect(perTenant('    maxProcesses: 7', ...apiKeys)).toBe(4);
    expect(perTenant('    maxProcessesPerTenant: 5', ...apiKeys)).toBe(5);
  });

  it('is what --stdio -- ARGV builds', () => {
    const config = defaultConfig({ stdioCommand: ['npx', '-y', '@modelcontextprotocol/server-memory'] });
    expect(config.upstream.stdio?.command).toEqual(['npx', '-y', '@modelcontextprotocol/server-memory']);
    expect(config.upstream.url).toBeUndefined();
  });
});
