// The interop matrix: real MCP clients x real MCP servers, each pair exercised directly and through
// mcp-edge, one cell per capability. A transparent proxy passes every cell that passes directly.
//
//   npx tsx scripts/interop-matrix.ts        prints the matrix (exit 1 when a cell passes only directly)
//
// Clients: SDK v1 1.32, SDK v2 2.4, MCP Inspector CLI 2.12. Servers: SDK v1 stateful / stateless /
// JSON, SDK v2 2.4, server-everything, the mcp-edge demo server. The last row is an error path: an
// edge with a 1 MiB response ceiling must refuse the ~2 MiB result with JSON-RPC error -32603 whose
// data.reason is "limit_exceeded"; directly (no ceiling) the same call simply succeeds.
import { pathToFileURL } from 'node:url';
import { startTestEdge, type TestEdge } from '../test/support/start-edge.js';
import {
  CallError,
  CLIENT_DRIVERS,
  type ClientDriver,
  type ClientName,
  type ClientSession,
} from './interop/clients.js';
import {
  BLOB_BYTES,
  type BlobServer,
  type RunningServer,
  type ServerName,
  type ServerProfile,
  serverProfiles,
  startBlobServer,
} from './interop/servers.js';

export const CAPABILITIES = [
  'initialize',
  'tools/list',
  'tools/call text',
  'tools/call structured',
  'tools/call large',
  'resources/read',
  'prompts/get',
  'progress',
] as const;

/** The error-path row: compared on its own (directly there is no ceiling, so the call succeeds). */
export const CEILING_ROW = 'ceiling error';

export type Capability = (typeof CAPABILITIES)[number] | typeof CEILING_ROW;

export type CellStatus = 'pass' | 'fail' | 'n/a';

export interface Cell {
  status: CellStatus;
  /** Why it failed, or what a pass means where that is not obvious. */
  detail?: string;
}

export interface MatrixEntry {
  client: ClientName;
  server: ServerName;
  capability: Capability;
  direct: Cell;
  proxied: Cell;
}

export interface Matrix {
  clients: Array<{ name: ClientName; label: string }>;
  servers: Array<{ name: ServerName; label: string }>;
  entries: MatrixEntry[];
}

/** Ceilings far above anything the matrix sends: the proxied column must match the direct one. */
export const EDGE_YAML =
  'limits: { response: { maxMessageBytes: 64MiB }, request: { maxBodyBytes: 64MiB, maxMessageBytes: 64MiB } }';
/** A 1 MiB response ceiling that the ~2 MiB result goes over. */
export const CEILING_EDGE_YAML =
  'limits: { response: { maxMessageBytes: 1MiB }, request: { maxBodyBytes: 64MiB, maxMessageBytes: 64MiB } }';

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function describeError(error: unknown): string {
  if (error instanceof CallError && error.code !== undefined) return `error ${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

/** Runs a check: it resolves with a problem (fail), nothing (pass), or throws (fail). */
async function cellOf(
  check: () => Promise<string | undefined>,
  what: string,
  timeoutMs: number,
): Promise<Cell> {
  try {
    const problem = await withTimeout(check(), timeoutMs, what);
    return problem === undefined ? { status: 'pass' } : { status: 'fail', detail: problem };
  } catch (error) {
    return { status: 'fail', detail: describeError(error).slice(0, 300) };
  }
}

type Probe = [
  Exclude<Capability, 'initialize' | typeof CEILING_ROW>,
  (() => Promise<string | undefined>) | undefined,
];

function probesFor(profile: ServerProfile, session: ClientSession): Probe[] {
  const { text, structured, large, progress, resource, prompt } = profile;
  const withProgress = session.callToolWithProgress?.bind(session);
  return [
    [
      'tools/list',
      async () => {
        const tools = await session.listTools();
        const missing = [text.tool, structured.tool, large.tool, progress.tool].filter(
          (t) => !tools.includes(t),
        );
        return missing.length === 0 ? undefined : `tools/list lacks ${missing.join(', ')}`;
      },
    ],
    ['tools/call text', async () => text.problem(await session.callTool(text.tool, text.args))],
    [
      'tools/call structured',
      async () => structured.problem(await session.callTool(structured.tool, structured.args)),
    ],
    ['tools/call large', async () => large.problem(await session.callTool(large.tool, large.args))],
    [
      'resources/read',
      resource === undefined
        ? undefined
        : async () => resource.problem(await session.readResource(resource.uri)),
    ],
    [
      'prompts/get',
      prompt === undefined
        ? undefined
        : async () => prompt.problem(await session.getPrompt(prompt.name, prompt.args)),
    ],
    [
      'progress',
      withProgress === undefined
        ? undefined
        : async () => {
            const { progress: seen } = await withProgress(progress.tool, progress.args);
            const ordered = seen.every((value, index) => index === 0 || value > (seen[index - 1] ?? 0));
            return seen.length === progress.steps && ordered
              ? undefined
              : `saw ${seen.length} progress notifications (${seen.join(', ')}), expected ${progress.steps}`;
          },
    ],
  ];
}

const NOT_OFFERED: Cell = { status: 'n/a', detail: 'the server or client has no such feature' };

/** One column: every capability of one client against one URL (a server, or an edge in front of it). */
async function runColumn(
  driver: ClientDriver,
  profile: ServerProfile,
  url: string,
): Promise<Map<Capability, Cell>> {
  const cells = new Map<Capability, Cell>();
  const connecting = driver.connect(url);
  const initialize = await cellOf(
    async () => {
      await connecting;
      return undefined;
    },
    'initialize',
    driver.callTimeoutMs,
  );
  cells.set('initialize', initialize);
  if (initialize.status !== 'pass') {
    // A connection that comes up after all is closed, not leaked.
    connecting.then((late) => late.close()).catch(() => {});
    for (const capability of CAPABILITIES.slice(1)) {
      cells.set(capability, { status: 'fail', detail: 'initialize failed' });
    }
    return cells;
  }
  const connected = await connecting;
  try {
    const probes = probesFor(profile, connected);
    const run = async ([capability, check]: Probe) => {
      cells.set(
        capability,
        check === undefined
          ? NOT_OFFERED
          : await cellOf(check, `${driver.name} ${capability}`, driver.callTimeoutMs),
      );
    };
    if (driver.concurrentCalls) await Promise.all(probes.map(run));
    else for (const probe of probes) await run(probe);
  } finally {
    await connected.close();
  }
  return cells;
}

/** Whether what a call threw is the edge's refusal contract: -32603 with data.reason "limit_exceeded". */
export function judgeRefusal(client: ClientName, thrown: unknown): Cell {
  if (thrown === undefined) return { status: 'fail', detail: 'not refused: the call succeeded' };
  if (!(thrown instanceof CallError))
    return { status: 'fail', detail: `failed otherwise: ${describeError(thrown)}` };
  // The Inspector CLI prints a JSON-RPC error's message only, without its code or data.
  if (client === 'inspector-cli' && thrown.code === undefined) {
    return thrown.message.includes('over the response.maxMessageBytes limit')
      ? { status: 'pass', detail: 'refused; the CLI shows the message (no code, no data)' }
      : { status: 'fail', detail: `refused with ${thrown.message}` };
  }
  if (thrown.code !== -32603) return { status: 'fail', detail: `refused with ${describeError(thrown)}` };
  const reason = (thrown.data as { reason?: unknown } | undefined)?.reason;
  return reason === 'limit_exceeded'
    ? { status: 'pass', detail: '-32603, data.reason limit_exceeded' }
    : { status: 'fail', detail: `-32603 without data.reason limit_exceeded: ${thrown.message}` };
}

/** The error path: through an edge with a 1 MiB response ceiling, the large call must be refused. */
async function ceilingCell(driver: ClientDriver, profile: ServerProfile, url: string): Promise<Cell> {
  const connecting = driver.connect(url, { verify: false });
  try {
    const session = await withTimeout(connecting, driver.callTimeoutMs, 'initialize');
    const thrown = await withTimeout(
      session.callTool(profile.large.tool, profile.large.args).then(
        () => undefined,
        (error: unknown) => error ?? new Error('rejected without a reason'),
      ),
      driver.callTimeoutMs,
      'ceiling call',
    );
    return judgeRefusal(driver.name, thrown);
  } catch (error) {
    return { status: 'fail', detail: describeError(error) };
  } finally {
    connecting.then((session) => session.close()).catch(() => {});
  }
}

interface ServerUnderTest {
  server: RunningServer;
  edge: TestEdge;
  ceilingEdge: TestEdge;
}

async function startServerUnderTest(profile: ServerProfile): Promise<ServerUnderTest> {
  const server = await profile.start();
  const edge = await startTestEdge(server.url, EDGE_YAML);
  const ceilingEdge = await startTestEdge(server.url, CEILING_EDGE_YAML);
  return { server, edge, ceilingEdge };
}

async function stopServerUnderTest({ server, edge, ceilingEdge }: ServerUnderTest): Promise<void> {
  await Promise.allSettled([edge.stop(), ceilingEdge.stop()]);
  await server.close();
}

async function entriesForClient(
  driver: ClientDriver,
  profile: ServerProfile,
  running: ServerUnderTest,
): Promise<MatrixEntry[]> {
  const [direct, proxied, ceiling] = await Promise.all([
    runColumn(driver, profile, running.server.url),
    runColumn(driver, profile, running.edge.url),
    ceilingCell(driver, profile, running.ceilingEdge.url),
  ]);
  const entry = (capability: Capability, d: Cell | undefined, p: Cell | undefined): MatrixEntry => ({
    client: driver.name,
    server: profile.name,
    capability,
    direct: d ?? { status: 'fail', detail: 'not run' },
    proxied: p ?? { status: 'fail', detail: 'not run' },
  });
  const largeDirectly = direct.get('tools/call large');
  const noCeiling: Cell = {
    status: largeDirectly?.status ?? 'fail',
    detail: `no ceiling directly: the large call ${largeDirectly?.status === 'pass' ? 'succeeds' : 'fails'}`,
  };
  return [
    ...CAPABILITIES.map((capability) => entry(capability, direct.get(capability), proxied.get(capability))),
    entry(CEILING_ROW, noCeiling, ceiling),
  ];
}

export interface MatrixOptions {
  clients?: readonly ClientName[];
  servers?: readonly ServerName[];
}

/**
 * Runs the whole matrix: every server and its two edges start first; the servers are then visited one
 * after another, the clients of one server at once; everything stops together at the end. (Servers,
 * edges and SDK clients share this process: running every pair at once only makes them queue.)
 */
export async function runMatrix(opts: MatrixOptions = {}): Promise<Matrix> {
  const drivers = CLIENT_DRIVERS.filter((driver) => opts.clients?.includes(driver.name) ?? true);
  const blob: BlobServer = await startBlobServer(BLOB_BYTES);
  const profiles = serverProfiles(blob).filter((profile) => opts.servers?.includes(profile.name) ?? true);
  const started = await Promise.allSettled(profiles.map(startServerUnderTest));
  try {
    const entries: MatrixEntry[] = [];
    for (const [index, profile] of profiles.entries()) {
      const running = started[index];
      if (running?.status !== 'fulfilled')
        throw new Error(`${profile.name} did not start: ${String(running?.reason)}`);
      const perClient = await Promise.all(
        drivers.map((driver) => entriesForClient(driver, profile, running.value)),
      );
      entries.push(...perClient.flat());
    }
    return {
      clients: drivers.map(({ name, label }) => ({ name, label })),
      servers: profiles.map(({ name, label }) => ({ name, label })),
      entries,
    };
  } finally {
    await Promise.allSettled(
      started.map((result) =>
        result.status === 'fulfilled' ? stopServerUnderTest(result.value) : undefined,
      ),
    );
    await blob.close();
  }
}

/** Cells that pass directly but not through mcp-edge: what a transparent proxy must never produce. */
export function proxyRegressions(matrix: Matrix): MatrixEntry[] {
  return matrix.entries.filter((entry) => entry.direct.status === 'pass' && entry.proxied.status !== 'pass');
}

function statusText(cell: Cell): string {
  return cell.status === 'fail' ? 'FAIL' : cell.status;
}

function cellText(entry: MatrixEntry | undefined): string {
  if (entry === undefined) return '';
  if (entry.direct.status === 'n/a' && entry.proxied.status === 'n/a') return 'n/a';
  return `${statusText(entry.direct)}/${statusText(entry.proxied)}`;
}

/** One table per client: a row per capability, a column per server, each cell `direct/proxied`. */
export function formatMatrix(matrix: Matrix): string {
  const lines: string[] = [
    'cells: direct/through-mcp-edge; ceiling error: direct = the large call (no ceiling), proxied = refused by a 1 MiB ceiling',
  ];
  const width = Math.max(12, ...matrix.servers.map((server) => server.name.length + 2));
  const rowNames: Capability[] = [...CAPABILITIES, CEILING_ROW];
  for (const client of matrix.clients) {
    lines.push('', `client: ${client.name} (${client.label})`);
    lines.push(['capability'.padEnd(22), ...matrix.servers.map((s) => s.name.padEnd(width))].join(''));
    for (const capability of rowNames) {
      const cells = matrix.servers.map((server) =>
        cellText(
          matrix.entries.find(
            (e) => e.client === client.name && e.server === server.name && e.capability === capability,
          ),
        ).padEnd(width),
      );
      lines.push([capability.padEnd(22), ...cells].join(''));
    }
  }
  const failures = matrix.entries.filter((e) => e.direct.status === 'fail' || e.proxied.status === 'fail');
  if (failures.length > 0) {
    lines.push('', 'failed cells:');
    for (const e of failures) {
      const side = (name: string, cell: Cell) =>
        cell.status === 'fail' ? ` ${name}: ${cell.detail ?? ''}` : '';
      lines.push(
        `  ${e.client} x ${e.server} / ${e.capability}:${side('direct', e.direct)}${side('proxied', e.proxied)}`,
      );
    }
  }
  lines.push(
    '',
    'servers:',
    ...matrix.servers.map((server) => `  ${server.name.padEnd(14)} ${server.label}`),
  );
  return lines.join('\n');
}

async function main(): Promise<void> {
  const matrix = await runMatrix();
  console.log(formatMatrix(matrix));
  const regressions = proxyRegressions(matrix);
  console.log(`\n${regressions.length} cell(s) pass directly but not through mcp-edge`);
  process.exitCode = regressions.length === 0 ? 0 : 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
