// Sizes and durations as operators write them in the config. Strict on purpose: a value that
// could be read two ways ("4M", "4 mb", a bare 30) is an error, never a guess.

const SIZE_UNITS: Readonly<Record<string, bigint>> = {
  B: 1n,
  KB: 1000n,
  MB: 1000n ** 2n,
  GB: 1000n ** 3n,
  KiB: 1024n,
  MiB: 1024n ** 2n,
  GiB: 1024n ** 3n,
};

/** A size with a unit, as the config takes it. */
export const SIZE_PATTERN = /^(0|[1-9][0-9]*)(?:\.([0-9]+))?(B|KB|MB|GB|KiB|MiB|GiB)$/;
const SIZE_HINT = 'use bytes or a number with B, KB, MB, GB, KiB, MiB, GiB';

const DURATION_UNITS_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
/** A duration with a unit, as the config takes it. */
export const DURATION_PATTERN = /^(0|[1-9][0-9]*)(ms|s|m|h)$/;
const DURATION_HINT = 'use an integer with ms, s, m or h, e.g. "250ms", "5s", "2m", "1h"; 0 disables';

/** How a config value reads in a message: strings quoted, everything else as JSON would show it. */
function describeInput(input: unknown): string {
  if (typeof input === 'string') return JSON.stringify(input);
  if (typeof input === 'number' || typeof input === 'boolean' || input === null) return String(input);
  if (input === undefined) return 'nothing';
  if (Array.isArray(input)) return 'a list';
  return typeof input === 'object' ? 'a mapping' : `a ${typeof input}`;
}

/** Bytes from an integer or a `<number><unit>` string; throws an Error whose message says why not. */
export function parseSize(input: unknown): number {
  if (typeof input === 'number') {
    if (Number.isSafeInteger(input) && input >= 0) return input;
    throw new Error(`${describeInput(input)} is not a size; a number of bytes must be a whole number >= 0`);
  }
  if (typeof input !== 'string') throw new Error(`${describeInput(input)} is not a size; ${SIZE_HINT}`);
  const match = SIZE_PATTERN.exec(input);
  if (!match) throw new Error(`${describeInput(input)} is not a size; ${SIZE_HINT}`);
  const [, whole = '0', fraction = '', unit = 'B'] = match;
  // Exact arithmetic: "1.5MB" is 1,500,000 bytes, "0.3KB" is 300, never 300.00000000000006.
  const scale = 10n ** BigInt(fraction.length);
  const scaledBytes = (BigInt(whole) * scale + BigInt(fraction || '0')) * (SIZE_UNITS[unit] ?? 1n);
  if (scaledBytes % scale !== 0n) {
    throw new Error(`${describeInput(input)} is not a whole number of bytes`);
  }
  const bytes = scaledBytes / scale;
  if (bytes > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`${describeInput(input)} is too large`);
  return Number(bytes);
}

/** Milliseconds from `<int>ms|s|m|h`, or the integer 0 ("disabled"). A bare number other than 0 is refused. */
export function parseDuration(input: unknown): number {
  if (input === 0) return 0;
  if (typeof input === 'number') {
    throw new Error(`${describeInput(input)} is not a duration; a unit is required: ${DURATION_HINT}`);
  }
  if (typeof input !== 'string')
    throw new Error(`${describeInput(input)} is not a duration; ${DURATION_HINT}`);
  const match = DURATION_PATTERN.exec(input);
  if (!match) throw new Error(`${describeInput(input)} is not a duration; ${DURATION_HINT}`);
  const [, amount = '0', unit = 'ms'] = match;
  const ms = Number(amount) * (DURATION_UNITS_MS[unit] ?? 1);
  if (!Number.isSafeInteger(ms)) throw new Error(`${describeInput(input)} is too long`);
  return ms;
}

const BINARY_UNITS: ReadonlyArray<readonly [string, number]> = [
  ['GiB', 1024 ** 3],
  ['MiB', 1024 ** 2],
  ['KiB', 1024],
];

/** A byte count for humans: the largest binary unit that divides it exactly ("4 MiB"), else bytes ("1,000 B"). */
export function formatSize(bytes: number): string {
  if (bytes > 0 && Number.isInteger(bytes)) {
    for (const [unit, factor] of BINARY_UNITS) {
      if (bytes % factor === 0) return `${(bytes / factor).toLocaleString('en-US')} ${unit}`;
    }
  }
  return `${bytes.toLocaleString('en-US')} B`;
}

/** Milliseconds as a config value, in the largest exact unit: "250ms", "10s", "2m", "1h" (0 is "0s"). Reads back with parseDuration. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  for (const [unit, factor] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms % factor === 0) return `${ms / factor}${unit}`;
  }
  return `${ms}ms`;
}
