// `npm run fuzz`: every property of the suite (each `fc.assert` in test/), run for FUZZ_SECONDS (default 600)
// in all or until the first counterexample, through test/support/property-runs.ts. Prints what each property
// ran, the shrunk counterexample with its seed and path and how to replay it, and as its last line
// `N cases, D disagreements`. Exit status 0 only when every property held and every test passed.
//
//   npm run fuzz                                   all properties, 10 minutes
//   FUZZ_SECONDS=1800 npm run fuzz                 a long run
//   npm run fuzz -- test/unit/json-scan.test.ts    the properties of some files only
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PropertyRecord } from '../test/support/property-runs.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** As vitest.config.ts runs them. */
const WORKERS = 2;
const PROPERTY_CALL = /\bfc\.assert\(/g;

/** Test files under `dir` (relative to the repository), recursively. */
function testFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...testFiles(path));
    else if (entry.name.endsWith('.test.ts')) out.push(path);
  }
  return out.sort();
}

/** The files that hold properties, each with how many (a property inside a loop counts once). */
function propertyFiles(only: string[]): { file: string; properties: number }[] {
  const wanted = only.map((f) => relative(ROOT, join(ROOT, f)));
  return testFiles('test')
    .filter((file) => wanted.length === 0 || wanted.some((w) => file.startsWith(w)))
    .map((file) => ({
      file,
      properties: readFileSync(join(ROOT, file), 'utf8').match(PROPERTY_CALL)?.length ?? 0,
    }))
    .filter((entry) => entry.properties > 0);
}

function readRecords(report: string): PropertyRecord[] {
  let text = '';
  try {
    text = readFileSync(join(report, 'results.jsonl'), 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as PropertyRecord);
}

/** Where the property's test lives and how to run its counterexample again under `npm test`'s runner. */
function replayLine(record: PropertyRecord): string {
  const [file, ...rest] = record.property.split(' > ');
  const name = rest.join(' ').replace(/[\\'"`$]/g, '.');
  // A model-based property's command sequence replays from its replayPath too (fc.commands' option).
  const replayPath = /replayPath="([^"]*)"/.exec(record.counterexample ?? '')?.[1];
  const replay = replayPath !== undefined ? ` FC_REPLAY_PATH='${replayPath}'` : '';
  return `FC_SEED=${record.seed} FC_PATH='${record.path}'${replay} npx vitest run ${file} -t '${name}'`;
}

function printSummary(records: PropertyRecord[], vitestStatus: number | null): number {
  const seconds = (ms: number) => (ms / 1000).toFixed(0).padStart(5);
  console.log('\nmcp-edge fuzz: cases per property');
  for (const r of [...records].sort((a, b) => a.property.localeCompare(b.property))) {
    console.log(
      `${String(r.cases).padStart(10)} ${seconds(r.ms)} s  ${r.failed ? 'FAILED ' : ''}${r.property}`,
    );
  }
  const failures = records.filter((r) => r.failed);
  for (const failure of failures) {
    console.log(`\ncounterexample of ${failure.property}`);
    console.log(`seed ${failure.seed}, path ${failure.path}`);
    console.log(failure.report ?? '');
    console.log(`replay: ${replayLine(failure)}`);
  }
  if (vitestStatus !== 0 && failures.length === 0)
    console.log(
      `\nvitest exited with status ${vitestStatus}: a test other than a property failed (see above)`,
    );
  const cases = records.reduce((sum, r) => sum + r.cases, 0);
  console.log(`${records.length} properties`);
  console.log(`${cases} cases, ${failures.length} disagreements`);
  return failures.length > 0 || vitestStatus !== 0 ? 1 : 0;
}

async function main(): Promise<number> {
  const totalSeconds = Number(process.env.FUZZ_SECONDS ?? 600);
  if (!Number.isFinite(totalSeconds) || totalSeconds <= 0) {
    console.error(`FUZZ_SECONDS must be a positive number of seconds, not ${process.env.FUZZ_SECONDS}`);
    return 2;
  }
  const files = propertyFiles(process.argv.slice(2));
  if (files.length === 0) {
    console.error('no test file with a property (fc.assert) matches');
    return 2;
  }
  const properties = files.reduce((sum, f) => sum + f.properties, 0);
  const report = mkdtempSync(join(tmpdir(), 'mcp-edge-fuzz-'));
  const deadline = Date.now() + totalSeconds * 1000;
  console.log(`mcp-edge fuzz: ${properties} properties in ${files.length} files for ${totalSeconds} s`);
  const vitest = join(ROOT, 'node_modules', '.bin', 'vitest');
  // A property may take the whole run; the test timeout leaves it room (the deadline ends it).
  const timeout = String(totalSeconds * 1000 + 120_000);
  const child = spawn(vitest, ['run', ...files.map((f) => f.file), '--testTimeout', timeout, '--bail', '1'], {
    cwd: ROOT,
    stdio: 'inherit',
    env: {
      ...process.env,
      FUZZ_REPORT: report,
      FUZZ_DEADLINE: String(deadline),
      FUZZ_PROPERTIES: String(properties),
      FUZZ_WORKERS: String(WORKERS),
      FUZZ_PLAN: JSON.stringify(Object.fromEntries(files.map((f) => [f.file, f.properties]))),
    },
  });
  const status = await new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const records = readRecords(report);
  rmSync(report, { recursive: true, force: true });
  return printSummary(records, status);
}

process.exitCode = await main();
