// `mcp-edge audit`: connect as an MCP client, walk every listing, make the calls of --calls, measure
// everything with the edge's own functions, and print a table (or --json). Exit codes: 0, 1 over a
// --fail-over host's budget, 2 usage, 3 the server could not be reached or initialized.
import { readFileSync } from 'node:fs';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { formatProblem } from '../config/config-error.js';
import { ConfigError, defaultConfig, loadConfigFile } from '../config/load.js';
import { printable, printableJsonLines } from '../core/printable.js';
import { DEFAULT_HOST_BUDGETS, HostTable } from '../hosts/host-table.js';
import type { HostProfile } from '../hosts/profiles.js';
import { AUDIT_USAGE, type AuditOptions, AuditUsageError, parseAuditArgs } from './args.js';
import { type CallReport, type CallSpec, CallsFileError, parseCallsFile, runCall } from './calls.js';
import { catalogWeight } from './catalog.js';
import {
  callFindings,
  cursorFindings,
  type Finding,
  pagingFindings,
  toolFindings,
  walkFindings,
} from './findings.js';
import { httpTransport } from './http-transport.js';
import { LISTINGS, type ListingWalk, probeInvalidCursor, type WalkBounds, walkListing } from './listing.js';
import { RawTap } from './raw-tap.js';
import { type AuditReport, listingReport, overBudget } from './report.js';
import { type AuditSession, openSession, reasonOf } from './session.js';
import { EdgeStdioTransport } from './stdio-transport.js';
import { formatAuditTable } from './table.js';

export const EXIT_OVER_BUDGET = 1;
export const EXIT_USAGE = 2;
export const EXIT_UNREACHABLE = 3;

interface Output {
  out(text: string): void;
  err(text: string): void;
}

/** The host table of --config (its `hosts:` and `hostBudgets:`), or the built-in profiles. */
async function hostTableOf(configFile: string | undefined): Promise<HostTable> {
  if (configFile === undefined) return new HostTable();
  const { config } = await loadConfigFile(configFile);
  return new HostTable(config.hosts ?? {}, config.hostBudgets ?? DEFAULT_HOST_BUDGETS);
}

function profilesOf(table: HostTable, options: AuditOptions): HostProfile[] {
  const names = [...(options.hosts ?? table.profiles.map((p) => p.name)), ...options.failOver];
  const profiles: HostProfile[] = [];
  for (const name of new Set(names)) {
    const profile = table.profile(name);
    if (profile === undefined) {
      throw new AuditUsageError(
        `no host profile "${name}" (profiles: ${table.profiles.map((p) => p.name).join(', ')}; add one under hosts: and pass --config)`,
      );
    }
    profiles.push(profile);
  }
  return profiles;
}

function transportOf(options: AuditOptions, tap: RawTap): Transport {
  if ('url' in options.target) return httpTransport(options.target.url, options.headers, tap);
  const spec = defaultConfig({ stdioCommand: options.target.command }).upstream.stdio;
  if (spec === undefined) throw new Error('a stdio command gave no stdio upstream');
  return new EdgeStdioTransport(spec, tap);
}

function describeTarget(options: AuditOptions): string {
  return 'url' in options.target ? options.target.url.href : options.target.command.join(' ');
}

async function audit(
  session: AuditSession,
  options: AuditOptions,
  calls: CallSpec[],
  table: HostTable,
  profiles: HostProfile[],
  bounds: WalkBounds,
): Promise<AuditReport> {
  const findings: Finding[] = [];
  const walks: ListingWalk[] = [];
  let tools: ListingWalk | undefined;
  for (const listing of LISTINGS) {
    if (session.server.capabilities[listing.capability] === undefined) continue;
    const walk = await walkListing(session, listing, bounds);
    walks.push(walk);
    if (listing.method === 'tools/list') tools = walk;
    findings.push(...walkFindings(walk, options.maxPages));
    if (walk.stop === 'error') continue;
    const second = walk.stop === 'end' ? await walkListing(session, listing, bounds) : undefined;
    findings.push(...pagingFindings(walk, second));
    findings.push(...cursorFindings(listing.method, await probeInvalidCursor(session, listing, bounds)));
  }
  const catalog = catalogWeight(tools, profiles, table.maxTokenizedChars);
  findings.push(...toolFindings(catalog, options.descriptorShare));
  const results: CallReport[] = [];
  for (const call of calls) {
    results.push(await runCall(session, call, profiles, table.maxTokenizedChars, bounds.remaining()));
  }
  findings.push(...callFindings(results, catalog));
  const report: AuditReport = {
    server: { name: session.server.name, version: session.server.version, target: describeTarget(options) },
    protocolVersion: session.server.protocolVersion,
    bounds: {
      maxPages: options.maxPages,
      timeoutMs: options.timeoutMs,
      maxMessageBytes: options.maxMessageBytes,
    },
    hosts: profiles.map((p) => ({
      name: p.name,
      title: p.title,
      budgets: p.budgets.map((b) => ({ ...b })),
      catalog:
        p.catalog === undefined
          ? undefined
          : { budgets: p.catalog.budgets.map((b) => ({ ...b })), past: p.catalog.past },
      channels: p.channels,
      past: p.past,
    })),
    catalog: { ...catalog, tools: catalog.tools.map(({ descriptor: _d, ...weight }) => weight) },
    listings: walks.map(listingReport),
    calls: results,
    findings,
    failOver: { hosts: options.failOver, over: [] },
  };
  report.failOver.over = overBudget(report, options.failOver);
  return report;
}

/**
 * Why the server could not be reached or initialized (`ended`: how its process ended before audit stopped
 * it, else the error), and the last lines of its stderr: all in printable form.
 */
function unreachableText(
  options: AuditOptions,
  transport: Transport,
  error: unknown,
  ended: string | undefined,
): string {
  const lines =
    transport instanceof EdgeStdioTransport ? transport.recentStderr.filter((l) => l !== ended) : [];
  const stderr =
    lines.length > 0
      ? `  the server's last stderr lines:\n${lines.map((l) => `    ${printable(l)}`).join('\n')}\n`
      : '';
  return `mcp-edge audit: could not reach or initialize ${printable(describeTarget(options))}: ${printable(ended ?? reasonOf(error))}\n${stderr}`;
}

/** Runs `mcp-edge audit ARGS`; resolves to the exit code. */
export async function runAudit(argv: readonly string[], output: Output): Promise<number> {
  const own = argv.indexOf('--') >= 0 ? argv.slice(0, argv.indexOf('--')) : argv;
  if (own.includes('--help') || own.includes('-h')) {
    output.out(`Usage:\n${AUDIT_USAGE}\n`);
    return 0;
  }
  let options: AuditOptions;
  let calls: CallSpec[] = [];
  let table: HostTable;
  let profiles: HostProfile[];
  try {
    options = parseAuditArgs(argv);
    table = await hostTableOf(options.configFile);
    profiles = profilesOf(table, options);
    if (options.callsFile !== undefined) {
      let text: string;
      try {
        text = readFileSync(options.callsFile, 'utf8');
      } catch (error) {
        throw new CallsFileError(
          `--calls ${options.callsFile}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
        );
      }
      calls = parseCallsFile(text, options.callsFile);
    }
  } catch (error) {
    if (error instanceof AuditUsageError || error instanceof CallsFileError) {
      output.err(`mcp-edge audit: ${printable(error.message)}\n\nUsage:\n${AUDIT_USAGE}\n`);
      return EXIT_USAGE;
    }
    if (error instanceof ConfigError) {
      const problems = error.problems.map((p) => printable(formatProblem(error.file, p)));
      output.err(`mcp-edge audit: configuration error\n${problems.join('\n')}\n`);
      return EXIT_USAGE;
    }
    throw error;
  }
  const deadline = Date.now() + options.timeoutMs;
  const bounds: WalkBounds = { maxPages: options.maxPages, remaining: () => deadline - Date.now() };
  const tap = new RawTap(options.maxMessageBytes);
  let session: AuditSession;
  const transport = transportOf(options, tap);
  try {
    session = await openSession(transport, tap, bounds.remaining());
  } catch (error) {
    // Read before close: a server that answered initialize with an error is ended by audit's own SIGTERM.
    const ended = transport instanceof EdgeStdioTransport ? transport.ended : undefined;
    await transport.close().catch(() => {});
    output.err(unreachableText(options, transport, error, ended));
    return EXIT_UNREACHABLE;
  }
  let report: AuditReport;
  try {
    report = await audit(session, options, calls, table, profiles, bounds);
  } finally {
    await session.close();
  }
  output.out(
    options.json ? `${printableJsonLines(JSON.stringify(report, null, 2))}\n` : formatAuditTable(report),
  );
  if (report.failOver.over.length > 0) {
    for (const line of report.failOver.over) output.err(`mcp-edge audit: over budget: ${printable(line)}\n`);
    return EXIT_OVER_BUDGET;
  }
  return 0;
}
