// What the demo tools return: text of exact sizes, a deterministic weather report, item lists and sized
// results, each a plain function so tests and scripts can build the same payloads.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export const MAX_SIZED_BYTES = 64 * 1024 * 1024;

const FILLER = 'The quick brown fox jumps over the lazy dog. ';

/** ASCII text of exactly `bytes` bytes (ASCII, so characters and UTF-8 bytes agree). */
export function asciiText(bytes: number): string {
  return FILLER.repeat(Math.ceil(bytes / FILLER.length)).slice(0, bytes);
}

/** CSV-looking report text of exactly `bytes` bytes, what an export tool typically returns. */
export function reportText(bytes: number): string {
  const header = 'row,region,product,units,revenue_usd\n';
  const lines = [header];
  let length = header.length;
  for (let row = 1; length < bytes; row += 1) {
    const line = `${row},region-${row % 17},product-${row % 101},${(row * 7) % 1000},${((row * 131) % 100000) / 100}\n`;
    lines.push(line);
    length += line.length;
  }
  return lines.join('').slice(0, bytes);
}

const UNICODE_SAMPLE =
  '漢字かなカナ한국어 — emoji 🚀🌍👩‍💻🇯🇵 — combining e\u0301 a\u0308 n\u0303 Z\u0351\u0352 — RTL עברית العربية\n';

export function unicodeText(repeat: number): string {
  return UNICODE_SAMPLE.repeat(repeat);
}

/** A small deterministic hash so the same city always gets the same weather. */
function cityHash(city: string): number {
  let hash = 2166136261;
  for (const char of city) {
    hash = Math.imul(hash ^ (char.codePointAt(0) ?? 0), 16777619) >>> 0;
  }
  return hash;
}

const CONDITIONS = [
  'sunny',
  'partly cloudy',
  'overcast',
  'light rain',
  'thunderstorms',
  'snow',
  'fog',
] as const;
const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;

/** The shape of weather_report's structuredContent (its outputSchema). */
export const weatherSchema = z.object({
  city: z.string(),
  temperatureC: z.number(),
  conditions: z.string(),
  humidityPercent: z.number(),
  windKph: z.number(),
  forecast: z.array(
    z.object({ day: z.string(), highC: z.number(), lowC: z.number(), conditions: z.string() }),
  ),
});

export type WeatherReport = z.infer<typeof weatherSchema>;

export function weatherReport(city: string): WeatherReport {
  const hash = cityHash(city);
  const pick = (shift: number, size: number) => (hash >>> shift) % size;
  return {
    city,
    temperatureC: pick(0, 40) - 5,
    conditions: CONDITIONS[pick(3, CONDITIONS.length)] ?? 'sunny',
    humidityPercent: 20 + pick(7, 75),
    windKph: pick(11, 60),
    forecast: WEEKDAYS.map((day, index) => {
      const low = ((hash >>> index) % 25) - 5;
      return {
        day,
        highC: low + 4 + (index % 6),
        lowC: low,
        conditions: CONDITIONS[(hash + index) % CONDITIONS.length] ?? 'sunny',
      };
    }),
  };
}

/** The shape of one list_items item. */
export const itemSchema = z.object({ id: z.number(), name: z.string(), tags: z.array(z.string()) });

export function listItems(count: number): Array<z.infer<typeof itemSchema>> {
  return Array.from({ length: count }, (_, index) => ({
    id: index + 1,
    name: `item-${index + 1}`,
    tags: [`group-${index % 10}`, index % 2 === 0 ? 'even' : 'odd'],
  }));
}

export function textResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }] };
}

/** A tool result whose chosen channel(s) carry about `bytes` bytes of payload. */
export function sizedResult(bytes: number, channel: 'text' | 'structured' | 'both'): CallToolResult {
  if (channel === 'text') return textResult(asciiText(bytes));
  const structuredContent = { bytes, payload: asciiText(bytes) };
  const content: CallToolResult['content'] =
    channel === 'both' ? [{ type: 'text', text: JSON.stringify(structuredContent) }] : [];
  return { content, structuredContent };
}
