// Non-asserting micro-benchmark: throughput of measuring a message against one JSON.parse of the same message,
// both ways the edge measures: measureMessage over a parsed value (requests), and scanMessage +
// measureScannedMessage over the bytes alone (responses: no decode, no JSON.parse).
// Run: npx tsx bench/core-measure.ts   (BENCH_ROUNDS=n for more rounds; --json prints the rows as JSON)
// bench/run.ts runs it in a child process (`--json`) as the harness's core micro-benchmark.
//
// "measure/parse" is the cost of measuring relative to the caller's JSON.parse; "total" is
// (parse + measure) / parse, the figure the design targets (at most 1.5). Times are CPU times; parse and
// measure runs are interleaved round by round and the median ratio is reported, so a busy machine skews both alike.

import { pathToFileURL } from 'node:url';
import { measureMessage, measureScannedMessage } from '../src/core/measure.js';
import { scanMessage } from '../src/core/message-scan.js';

type Alphabet = 'ascii' | 'cjk+emoji';
type Shape = 'text' | 'structured+compact-copy' | 'structured+pretty-copy';
const SHAPES: readonly Shape[] = ['text', 'structured+compact-copy', 'structured+pretty-copy'];

const SIZES: ReadonlyArray<readonly [string, number]> = [
  ['1 KiB', 1024],
  ['64 KiB', 64 * 1024],
  ['1 MiB', 1024 * 1024],
  ['16 MiB', 16 * 1024 * 1024],
];

const WORDS: Record<Alphabet, readonly string[]> = {
  ascii: [
    'the',
    'server',
    'returned',
    'a',
    '"quoted"',
    'value',
    'for',
    'path\\to\\file',
    'and',
    'tool',
    'result',
  ],
  'cjk+emoji': [
    '数据',
    '服务器',
    '返回了',
    '工具结果',
    '😀',
    '🚀✨',
    'café',
    'e\u0301',
    '한국어',
    '「引用」',
    'ok',
  ],
};

/** Prose of about `bytes` UTF-8 bytes: words, a newline every dozen words, a quote or backslash now and then. */
function prose(alphabet: Alphabet, bytes: number): string {
  const words = WORDS[alphabet];
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const word = words[(i * 7 + (i >> 3)) % words.length]!;
    const sep = i % 12 === 11 ? '\n' : ' ';
    parts.push(word, sep);
    size += Buffer.byteLength(word) + 1;
  }
  return parts.join('');
}

function message(result: unknown): string {
  // As the MCP TypeScript SDK writes a response: result first, id last.
  return JSON.stringify({ result, jsonrpc: '2.0', id: 5 });
}

function toolResult(shape: Shape, alphabet: Alphabet, target: number): string {
  if (shape === 'text') {
    const overhead = Buffer.byteLength(message({ content: [{ type: 'text', text: '' }] }));
    return message({
      content: [{ type: 'text', text: prose(alphabet, Math.max(1, (target - overhead) * 0.9)) }],
    });
  }
  const words = WORDS[alphabet];
  const build = (count: number): string => {
    const items = Array.from({ length: count }, (_, n) => ({
      id: n,
      name: `${words[n % words.length]} ${words[(n * 3) % words.length]}`,
      score: n * 0.25,
      tags: ['a', words[(n * 5) % words.length]],
      ok: n % 2 === 0,
    }));
    const structuredContent = { items, total: count };
    const text =
      shape === 'structured+pretty-copy'
        ? JSON.stringify(structuredContent, null, 2)
        : JSON.stringify(structuredContent);
    return message({ content: [{ type: 'text', text }], structuredContent });
  };
  // Grow the item count geometrically, then settle on the largest that fits the target.
  let count = 1;
  while (Buffer.byteLength(build(count * 2)) <= target) count *= 2;
  let step = count >> 1;
  while (step > 0) {
    if (Buffer.byteLength(build(count + step)) <= target) count += step;
    step >>= 1;
  }
  return build(count);
}

/** CPU time per run (user + system), which a busy machine inflates far less than wall time. */
function timeMs(run: () => void, repeat: number): number {
  const start = process.cpuUsage();
  for (let i = 0; i < repeat; i++) run();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1e3 / repeat;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

export interface CoreMeasureRow {
  shape: Shape;
  alphabet: Alphabet;
  label: string;
  bytes: number;
  parseMBps: number;
  measureMBps: number;
  /** Median over rounds of (measure time / parse time) for the same message. */
  measureOverParse: number;
  /** The same for a response's measurement from its bytes (scan + measure, no parse at all). */
  scanMBps: number;
  scanOverParse: number;
  duplicatedBytes: number;
}

export function runCoreMeasure(rounds: number, shapes: readonly Shape[] = SHAPES): CoreMeasureRow[] {
  const answers = { method: 'tools/call', tool: 'bench' };
  const cases = shapes.flatMap((shape) =>
    (['ascii', 'cjk+emoji'] as const).flatMap((alphabet) =>
      SIZES.map(([label, target]) => {
        const json = toolResult(shape, alphabet, target);
        return {
          shape,
          alphabet,
          label,
          json,
          bytes: new Uint8Array(Buffer.from(json, 'utf8')),
          value: JSON.parse(json),
        };
      }),
    ),
  );
  const scanAndMeasure = (bytes: Uint8Array) => {
    const scanned = scanMessage(bytes);
    if (scanned === undefined) throw new Error('the bench message does not scan');
    return measureScannedMessage(scanned, answers);
  };
  // Warm up every code path first, so no row pays for compilation.
  for (const c of cases) {
    for (let i = 0; i < (c.bytes.length < 1 << 20 ? 200 : 3); i++) {
      JSON.parse(c.json);
      measureMessage(c.bytes, c.value, answers);
      scanAndMeasure(c.bytes);
    }
  }
  return cases.map(({ shape, alphabet, label, json, bytes, value }) => {
    const measured = measureMessage(bytes, value, answers);
    // Enough repeats per round for about 30 ms of parsing.
    const once = Math.max(
      timeMs(() => JSON.parse(json), 5),
      1e-3,
    );
    const repeat = Math.max(3, Math.round(30 / once));
    const parseTimes: number[] = [];
    const measureTimes: number[] = [];
    const ratios: number[] = [];
    const scanTimes: number[] = [];
    const scanRatios: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const p = timeMs(() => JSON.parse(json), repeat);
      const m = timeMs(() => measureMessage(bytes, value, answers), repeat);
      const s = timeMs(() => scanAndMeasure(bytes), repeat);
      parseTimes.push(p);
      measureTimes.push(m);
      ratios.push(m / p);
      scanTimes.push(s);
      scanRatios.push(s / p);
    }
    const mb = bytes.length / 1e6;
    return {
      shape,
      alphabet,
      label,
      bytes: bytes.length,
      parseMBps: mb / (median(parseTimes) / 1e3),
      measureMBps: mb / (median(measureTimes) / 1e3),
      measureOverParse: median(ratios),
      scanMBps: mb / (median(scanTimes) / 1e3),
      scanOverParse: median(scanRatios),
      duplicatedBytes: measured.duplicatedBytes,
    };
  });
}

function printRows(rows: CoreMeasureRow[]): void {
  console.log(
    'shape                    alphabet   size     bytes     parse MB/s  measure MB/s  measure/parse  total  scan MB/s  scan/parse  dupBytes',
  );
  for (const row of rows) {
    console.log(
      [
        row.shape.padEnd(24),
        row.alphabet.padEnd(10),
        row.label.padEnd(8),
        String(row.bytes).padEnd(9),
        row.parseMBps.toFixed(0).padStart(10),
        row.measureMBps.toFixed(0).padStart(13),
        row.measureOverParse.toFixed(3).padStart(14),
        (1 + row.measureOverParse).toFixed(2).padStart(6),
        row.scanMBps.toFixed(0).padStart(10),
        row.scanOverParse.toFixed(3).padStart(11),
        String(row.duplicatedBytes).padStart(10),
      ].join(' '),
    );
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rows = runCoreMeasure(Number(process.env.BENCH_ROUNDS ?? 9));
  if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(rows)}\n`);
  else printRows(rows);
}
