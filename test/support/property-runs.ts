// How every property of the suite runs. Test files import 'fast-check'; vitest.config.ts resolves that name to
// this module, which is fast-check with its own `assert`: under `npm test` each property runs seeded (one seed
// for the suite, FC_SEED to change it, FC_PATH to replay a counterexample) and bounded by its numRuns; under
// `npm run fuzz` (scripts/fuzz.ts sets FUZZ_REPORT) each runs batch after batch with fresh seeds, for its share
// of FUZZ_SECONDS or until a counterexample, and reports what it ran. Nothing else of fast-check changes.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect } from 'vitest';
// The package itself, by its file: the name 'fast-check' resolves to this module.
import * as real from '../../node_modules/fast-check/lib/fast-check.js';

export * from '../../node_modules/fast-check/lib/fast-check.js';

/** The seed of every property under `npm test`, unless FC_SEED names another. */
export const SUITE_SEED = 4242;

/** What a fuzz run tells each property (environment variables set by scripts/fuzz.ts). */
interface FuzzRun {
  /** Directory for the run's records: `results.jsonl` (one line per property), `started`, `stop`. */
  report: string;
  /** When the whole run ends (epoch ms). */
  deadline: number;
  /** Properties the run expects (to share the time) and the workers running them at once. */
  properties: number;
  workers: number;
  /** Properties per test file (relative path): one worker runs a file's properties one after another. */
  perFile: Record<string, number>;
}

/** One property's record in a fuzz run, read back by scripts/fuzz.ts. */
export interface PropertyRecord {
  property: string;
  cases: number;
  ms: number;
  failed: boolean;
  /** A failure: fast-check's report (seed, path, the shrunk counterexample, the error). */
  report?: string;
  seed?: number;
  path?: string;
  counterexample?: string;
}

function fuzzRun(): FuzzRun | undefined {
  const report = process.env.FUZZ_REPORT;
  if (report === undefined || report === '') return undefined;
  return {
    report,
    deadline: Number(process.env.FUZZ_DEADLINE),
    properties: Math.max(1, Number(process.env.FUZZ_PROPERTIES ?? 1)),
    workers: Math.max(1, Number(process.env.FUZZ_WORKERS ?? 1)),
    perFile: JSON.parse(process.env.FUZZ_PLAN ?? '{}') as Record<string, number>,
  };
}

/** The test file that runs the property, relative to the repository. */
function testFile(): string {
  const path = expect.getState().testPath;
  return path !== undefined ? relative(process.cwd(), path) : '?';
}

/** The test that runs the property, as `file > describe > it`. */
function propertyName(): string {
  return `${testFile()} > ${expect.getState().currentTestName ?? '?'}`;
}

/** Adds one mark to a counter file of the run's directory; how many marks it held before. */
function countStart(file: string): number {
  appendFileSync(file, '.');
  return readFileSync(file, 'utf8').length - 1;
}

/**
 * This property's share of the time left: the time left times the workers, over the properties not yet
 * started (this one included), and never more than its own file's remaining properties leave it (a worker runs
 * them one after another). A property that ends early leaves its time to the rest.
 */
function shareOfTime(run: FuzzRun): number {
  const file = testFile();
  const before = countStart(join(run.report, 'started'));
  const beforeInFile = countStart(join(run.report, `started-${file.replace(/[^\w.-]/g, '_')}`));
  const left = Math.max(0, run.deadline - Date.now());
  const waiting = Math.max(run.workers, run.properties - before);
  const waitingInFile = Math.max(1, (run.perFile[file] ?? 1) - beforeInFile);
  return Math.min((left * run.workers) / waiting, left / waitingInFile);
}

const stopFile = (run: FuzzRun): string => join(run.report, 'stop');

function record(run: FuzzRun, entry: PropertyRecord): void {
  appendFileSync(join(run.report, 'results.jsonl'), `${JSON.stringify(entry)}\n`);
}

type Details = real.RunDetails<unknown>;

/** The largest batch of a fuzz run, in runs of the property. */
const MAX_BATCH_RUNS = 1_000_000;
/** Time a batch may run past its property's share, for a counterexample found late to shrink. */
const SHRINK_GRACE_MS = 60_000;

/** A batch's outcome for the loop: cases run, and the error to throw when it failed. */
function afterBatch(
  run: FuzzRun,
  name: string,
  total: number,
  ms: number,
  details: Details,
): Error | undefined {
  if (!details.failed) return undefined;
  const report = real.defaultReportMessage(details) ?? `Property failed (seed ${details.seed})`;
  record(run, {
    property: name,
    cases: total,
    ms,
    failed: true,
    report,
    seed: details.seed,
    path: details.counterexamplePath ?? '',
    counterexample: real.stringify(details.counterexample),
  });
  // The first counterexample ends the run: the other properties stop after their batch.
  appendFileSync(stopFile(run), `${name}\n`);
  return new Error(report);
}

/** Batches of the property's own numRuns, each with a fresh seed, while its share of the time lasts. */
function fuzzLoop(
  run: FuzzRun,
  property: real.IRawProperty<unknown>,
  params: real.Parameters<unknown>,
): void | Promise<void> {
  const name = propertyName();
  const started = Date.now();
  const until = Math.min(run.deadline, started + shareOfTime(run));
  let cases = 0;
  let batch = 0;
  // Batches grow while they take a small part of the time left: fast-check draws larger values in later runs
  // of a batch, so many short batches would keep to the small ones.
  let runs = params.numRuns ?? 100;
  let batchStarted = started;
  const paramsOf = (): real.Parameters<unknown> => ({
    ...params,
    numRuns: runs,
    // A batch that runs past the property's share stops there (a counterexample still has time to shrink).
    interruptAfterTimeLimit: Math.max(1, until - Date.now()) + SHRINK_GRACE_MS,
    // Examples the test names run in the first batch only.
    examples: batch === 0 ? (params.examples ?? []) : [],
    seed: Math.floor(Math.random() * 0x7fffffff) ^ Date.now(),
    path: undefined,
    includeErrorInReport: true,
  });
  const goOn = (): boolean => {
    const now = Date.now();
    if ((now - batchStarted) * 8 < until - now) runs = Math.min(runs * 2, MAX_BATCH_RUNS);
    batchStarted = now;
    return now < until && !existsSync(stopFile(run));
  };
  const done = (): void => record(run, { property: name, cases, ms: Date.now() - started, failed: false });
  if (!property.isAsync()) {
    do {
      const details = real.check(property as real.IProperty<unknown>, paramsOf()) as Details;
      batch++;
      cases += details.numRuns;
      const failure = afterBatch(run, name, cases, Date.now() - started, details);
      if (failure !== undefined) throw failure;
    } while (goOn());
    done();
    return;
  }
  return (async () => {
    do {
      const details = await real.check(property as real.IAsyncProperty<unknown>, paramsOf());
      batch++;
      cases += details.numRuns;
      const failure = afterBatch(run, name, cases, Date.now() - started, details);
      if (failure !== undefined) throw failure;
    } while (goOn());
    done();
  })();
}

function suiteParams(params: real.Parameters<unknown> = {}): real.Parameters<unknown> {
  const seed = process.env.FC_SEED;
  const path = process.env.FC_PATH;
  return {
    seed: seed !== undefined && seed !== '' ? Number(seed) : SUITE_SEED,
    ...(path !== undefined && path !== '' ? { path } : {}),
    ...params,
  };
}

function assertProperty(
  property: real.IRawProperty<unknown>,
  params?: real.Parameters<unknown>,
): void | Promise<void> {
  const run = fuzzRun();
  // A test that pins its own seed replays one known case: it runs as written.
  if (run === undefined || params?.seed !== undefined) return real.assert(property, suiteParams(params));
  return fuzzLoop(run, property, params ?? {});
}

// fast-check's own overloads (sync and async properties), over the one implementation above.
export const assert = assertProperty as typeof real.assert;

const fastCheck: typeof real = { ...real, assert };
export default fastCheck;
