// Runs the MCP conformance suite (@modelcontextprotocol/conformance 0.1.16) on the Node that runs this
// script, and reads its results per scenario.
//
// The suite is built for Node 22: it imports `globSync` from `fs`, which Node 20 lacks, so on Node 20 it
// fails to load. It is started here with a module resolve hook (scripts/node20-compat/) that gives that
// one import a small globSync; on Node 22+ the hook changes nothing. Its scenario servers call
// `listen(0)` with no host; scripts/conformance-loopback.cjs keeps them on 127.0.0.1.
//
//   npx tsx scripts/conformance.ts            the server suite against the fixture server, directly and
//                                             through mcp-edge; the DNS-rebinding scenario in front of
//                                             server-everything; the client scenarios through mcp-edge
//   npx tsx scripts/conformance.ts server --url URL [--scenario X]    the server suite against URL
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { REPO_ROOT, spawnNode } from '../test/support/processes.js';

const CONFORMANCE_ENTRY = fileURLToPath(
  new URL('../node_modules/@modelcontextprotocol/conformance/dist/index.js', import.meta.url),
);
const NODE20_HOOK = fileURLToPath(new URL('./node20-compat/register.mjs', import.meta.url));
const LOOPBACK_PRELOAD = fileURLToPath(new URL('./conformance-loopback.cjs', import.meta.url));

/** The client script the client scenarios run: an SDK v1 client, through an in-process mcp-edge. */
export const CONFORMANCE_CLIENT_SCRIPT = fileURLToPath(
  new URL('../test/fixtures/conformance-client.ts', import.meta.url),
);

/** The client scenarios that test an MCP client (the `auth/*` ones test OAuth flows, out of scope here). */
export const CLIENT_SCENARIOS = [
  'initialize',
  'tools_call',
  'elicitation-sep1034-client-defaults',
  'sse-retry',
] as const;

export type CheckStatus = 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';

export interface ConformanceCheck {
  id: string;
  status: CheckStatus;
  errorMessage?: string;
}

export interface ScenarioResult {
  scenario: string;
  /** SUCCESS checks. */
  passed: number;
  /** FAILURE checks. */
  failed: number;
  warnings: number;
  /** The checks that decide the outcome (SUCCESS, FAILURE, WARNING), in order. */
  checks: ConformanceCheck[];
  /** Client scenarios: what the client script printed (the suite saves it as stdout.txt). */
  clientStdout?: string;
}

export interface SuiteRun {
  results: ScenarioResult[];
  exitCode: number | null;
  /** The CLI's own output (stdout then stderr), for diagnosis. */
  output: string;
}

/** A scenario passes when no check failed and at least one check ran. */
export function scenarioPassed(result: ScenarioResult): boolean {
  return result.failed === 0 && result.checks.length > 0;
}

/** The node arguments that run the conformance CLI with `cliArgs` on this Node. */
export function conformanceNodeArgs(cliArgs: string[]): string[] {
  return ['--require', LOOPBACK_PRELOAD, '--import', NODE20_HOOK, CONFORMANCE_ENTRY, ...cliArgs];
}

function isCheckStatus(value: unknown): value is CheckStatus {
  return ['SUCCESS', 'FAILURE', 'WARNING', 'INFO', 'SKIPPED'].includes(String(value));
}

/** The decisive checks of one checks.json (INFO and SKIPPED lines only narrate the exchange). */
export function parseChecks(scenario: string, json: string): ScenarioResult {
  const parsed: unknown = JSON.parse(json);
  if (!Array.isArray(parsed)) throw new Error(`checks.json of ${scenario} is not an array`);
  const checks: ConformanceCheck[] = [];
  for (const entry of parsed as Array<Record<string, unknown>>) {
    const { id, status, errorMessage } = entry;
    if (typeof id !== 'string' || !isCheckStatus(status)) continue;
    if (status === 'INFO' || status === 'SKIPPED') continue;
    checks.push({ id, status, ...(typeof errorMessage === 'string' ? { errorMessage } : {}) });
  }
  const count = (status: CheckStatus) => checks.filter((check) => check.status === status).length;
  return { scenario, passed: count('SUCCESS'), failed: count('FAILURE'), warnings: count('WARNING'), checks };
}

/** Result folders are `[prefix-]<scenario>-<ISO time with - for : and .>`. */
const RESULT_DIR = /^(.+)-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z)$/;

async function readResults(outputDir: string, prefix: string): Promise<ScenarioResult[]> {
  const found: Array<{ time: string; result: ScenarioResult }> = [];
  for (const name of await readdir(outputDir)) {
    const match = RESULT_DIR.exec(name);
    if (match === null || !match[1]?.startsWith(prefix)) continue;
    const scenario = match[1].slice(prefix.length);
    const json = await readFile(join(outputDir, name, 'checks.json'), 'utf8');
    const clientStdout = await readFile(join(outputDir, name, 'stdout.txt'), 'utf8').catch(() => undefined);
    const result = parseChecks(scenario, json);
    found.push({
      time: match[2] ?? '',
      result: clientStdout === undefined ? result : { ...result, clientStdout },
    });
  }
  return found.sort((a, b) => a.time.localeCompare(b.time)).map(({ result }) => result);
}

async function runCli(cliArgs: string[], prefix: string, timeoutMs: number): Promise<SuiteRun> {
  const outputDir = await mkdtemp(join(tmpdir(), 'mcp-edge-conformance-'));
  const child = spawnNode(conformanceNodeArgs([...cliArgs, '-o', outputDir]), { cwd: REPO_ROOT });
  const timer = setTimeout(() => void child.stop(), timeoutMs);
  try {
    const exit = await child.exited;
    const output = `${child.stdout()}\n${child.stderr()}`;
    const results = await readResults(outputDir, prefix);
    if (results.length === 0 || (exit.code !== 0 && exit.code !== 1)) {
      throw new Error(
        `the conformance CLI wrote no results (exit ${JSON.stringify(exit)}):\n${output.slice(-4000)}`,
      );
    }
    return { results, exitCode: exit.code, output };
  } finally {
    clearTimeout(timer);
    await rm(outputDir, { recursive: true, force: true });
  }
}

export interface ServerSuiteOptions {
  url: string;
  /** One scenario; default: the whole suite. */
  scenario?: string;
  /** `all` (default: the 32 server scenarios, pending ones included), `active` or `pending`. */
  suite?: 'all' | 'active' | 'pending';
  timeoutMs?: number;
}

/** `conformance server --url URL ...`: one result per scenario, in the order they ran. */
export function runServerSuite(opts: ServerSuiteOptions): Promise<SuiteRun> {
  const selection =
    opts.scenario === undefined ? ['--suite', opts.suite ?? 'all'] : ['--scenario', opts.scenario];
  return runCli(['server', '--url', opts.url, ...selection], 'server-', opts.timeoutMs ?? 240_000);
}

export interface ClientScenarioOptions {
  scenario: string;
  /** Extra arguments for the client script (the suite appends the server URL after them). */
  clientArgs?: string[];
  timeoutMs?: number;
}

/** The shell command the suite runs for a client scenario (it splits on spaces and appends the URL). */
export function clientCommand(clientArgs: string[] = []): string {
  const words = [process.execPath, '--import', 'tsx', CONFORMANCE_CLIENT_SCRIPT, ...clientArgs];
  const spaced = words.find((word) => /\s/.test(word));
  if (spaced !== undefined)
    throw new Error(`the conformance CLI splits its --command on spaces: "${spaced}"`);
  return words.join(' ');
}

/** `conformance client --command "<our SDK v1 client>" --scenario X`. */
export async function runClientScenario(opts: ClientScenarioOptions): Promise<SuiteRun> {
  // Generous: the client script compiles TypeScript at start, which is slow on a busy machine.
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const args = ['client', '--command', clientCommand(opts.clientArgs), '--scenario', opts.scenario];
  return runCli([...args, '--timeout', String(timeoutMs - 5000)], '', timeoutMs);
}

const RELAYED_MARKER = 'mcp-edge relayed: ';

/** The exchanges (`HTTP-method rpc-methods status`) the client script's mcp-edge relayed; [] when none. */
export function relayedExchanges(result: ScenarioResult): string[] {
  const line = result.clientStdout?.split('\n').find((text) => text.startsWith(RELAYED_MARKER));
  if (line === undefined) return [];
  const parsed: unknown = JSON.parse(line.slice(RELAYED_MARKER.length));
  return Array.isArray(parsed) ? parsed.map(String) : [];
}

export interface CheckDifference {
  scenario: string;
  check: string;
  /** The check's statuses in run order, joined with `+` (a check may repeat), or `missing`. */
  direct: string;
  proxied: string;
}

function statusesOf(checks: ConformanceCheck[], id: string): string {
  return (
    checks
      .filter((check) => check.id === id)
      .map((check) => check.status)
      .join('+') || 'missing'
  );
}

/** Every check whose status differs between two runs of the same scenarios (a missing scenario counts). */
export function compareRuns(direct: ScenarioResult[], proxied: ScenarioResult[]): CheckDifference[] {
  const differences: CheckDifference[] = [];
  const scenarios = [...new Set([...direct, ...proxied].map((result) => result.scenario))];
  for (const scenario of scenarios) {
    const a = direct.find((result) => result.scenario === scenario)?.checks ?? [];
    const b = proxied.find((result) => result.scenario === scenario)?.checks ?? [];
    for (const check of new Set([...a, ...b].map((c) => c.id))) {
      const statuses = { direct: statusesOf(a, check), proxied: statusesOf(b, check) };
      if (statuses.direct !== statuses.proxied) differences.push({ scenario, check, ...statuses });
    }
    // A scenario that decided nothing in either run proves nothing: report it too.
    if (a.length === 0 && b.length === 0) {
      differences.push({ scenario, check: '(no checks)', direct: 'missing', proxied: 'missing' });
    }
  }
  return differences;
}

export interface SuiteSummary {
  scenarios: number;
  scenariosPassed: number;
  checksPassed: number;
  checksFailed: number;
  warnings: number;
}

export function summarize(results: ScenarioResult[]): SuiteSummary {
  return {
    scenarios: results.length,
    scenariosPassed: results.filter(scenarioPassed).length,
    checksPassed: results.reduce((sum, r) => sum + r.passed, 0),
    checksFailed: results.reduce((sum, r) => sum + r.failed, 0),
    warnings: results.reduce((sum, r) => sum + r.warnings, 0),
  };
}

function cell(result: ScenarioResult | undefined): string {
  if (result === undefined) return 'not run';
  const verdict = scenarioPassed(result) ? 'pass' : 'FAIL';
  const warnings = result.warnings > 0 ? `, ${result.warnings} warn` : '';
  return `${verdict} (${result.passed}/${result.passed + result.failed}${warnings})`;
}

function summaryLine(summary: SuiteSummary): string {
  return (
    `${summary.scenariosPassed}/${summary.scenarios} scenarios pass, ` +
    `${summary.checksPassed} checks passed, ${summary.checksFailed} failed, ${summary.warnings} warnings`
  );
}

/** A side-by-side table: one row per scenario, direct vs through mcp-edge. */
export function formatComparison(
  direct: ScenarioResult[],
  proxied: ScenarioResult[],
  labels: [string, string] = ['direct', 'through mcp-edge'],
): string {
  const scenarios = [...new Set([...direct, ...proxied].map((result) => result.scenario))];
  const width = Math.max(8, ...scenarios.map((scenario) => scenario.length));
  const rows = scenarios.map((scenario) => {
    const left = cell(direct.find((r) => r.scenario === scenario));
    const right = cell(proxied.find((r) => r.scenario === scenario));
    return `${scenario.padEnd(width)}  ${left.padEnd(22)}  ${right}`;
  });
  return [
    `${'scenario'.padEnd(width)}  ${labels[0].padEnd(22)}  ${labels[1]}`,
    ...rows,
    `${labels[0]}: ${summaryLine(summarize(direct))}`,
    `${labels[1]}: ${summaryLine(summarize(proxied))}`,
  ].join('\n');
}

/** Ceilings high enough for every scenario: the proxy must change nothing here. */
export const EDGE_YAML_FOR_CONFORMANCE = [
  'limits: { response: { maxMessageBytes: 64MiB }, request: { maxBodyBytes: 64MiB, maxMessageBytes: 64MiB } }',
  'server: { allowedHosts: [127.0.0.1, localhost] }',
].join('\n');

/** The whole proof, printed: what `npx tsx scripts/conformance.ts` runs. */
async function printFullReport(): Promise<void> {
  const { startConformanceServer } = await import('../test/fixtures/conformance-server.js');
  const { startTestEdge } = await import('../test/support/start-edge.js');
  const { startServerEverything } = await import('../test/support/server-everything.js');

  const fixture = await startConformanceServer();
  const edge = await startTestEdge(fixture.url, EDGE_YAML_FOR_CONFORMANCE);
  try {
    const direct = await runServerSuite({ url: fixture.url });
    const proxied = await runServerSuite({ url: edge.url });
    console.log('== server scenarios: fixture server, direct vs through mcp-edge');
    console.log(formatComparison(direct.results, proxied.results));
    console.log(`differences: ${JSON.stringify(compareRuns(direct.results, proxied.results))}\n`);
  } finally {
    await edge.stop();
    await fixture.close();
  }

  const everything = await startServerEverything();
  const guarded = await startTestEdge(everything.url, EDGE_YAML_FOR_CONFORMANCE);
  try {
    const scenario = 'dns-rebinding-protection';
    const direct = await runServerSuite({ url: everything.url, scenario });
    const proxied = await runServerSuite({ url: guarded.url, scenario });
    console.log('== dns-rebinding-protection: server-everything, direct vs mcp-edge with allowedHosts');
    console.log(formatComparison(direct.results, proxied.results, ['direct', 'mcp-edge allowedHosts']));
    console.log('');
  } finally {
    await guarded.stop();
    await everything.close();
  }

  console.log('== client scenarios: SDK v1 client, direct vs through mcp-edge');
  const directClients: ScenarioResult[] = [];
  const proxiedClients: ScenarioResult[] = [];
  for (const scenario of CLIENT_SCENARIOS) {
    directClients.push(...(await runClientScenario({ scenario, clientArgs: ['--direct'] })).results);
    proxiedClients.push(...(await runClientScenario({ scenario })).results);
  }
  console.log(formatComparison(directClients, proxiedClients));
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { url: { type: 'string' }, scenario: { type: 'string' } },
  });
  if (positionals[0] === 'server' && values.url !== undefined) {
    const run = await runServerSuite({
      url: values.url,
      ...(values.scenario === undefined ? {} : { scenario: values.scenario }),
    });
    for (const result of run.results) console.log(cell(result).padEnd(24), result.scenario);
    console.log(summaryLine(summarize(run.results)));
    process.exitCode = run.results.every(scenarioPassed) ? 0 : 1;
    return;
  }
  await printFullReport();
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
