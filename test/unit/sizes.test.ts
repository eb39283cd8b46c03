import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatDuration, formatSize, parseDuration, parseSize } from '../../src/config/sizes.js';

describe('parseSize', () => {
  it.each([
    ['0B', 0],
    ['1B', 1],
    ['1KB', 1000],
    ['1MB', 1_000_000],
    ['1GB', 1_000_000_000],
    ['1KiB', 1024],
    ['4MiB', 4 * 1024 * 1024],
    ['2GiB', 2 * 1024 ** 3],
    ['1.5MB', 1_500_000],
    ['1.5KiB', 1536],
    ['0.3KB', 300],
    ['0.5B', undefined],
  ])('reads %s', (text, bytes) => {
    if (bytes === undefined) expect(() => parseSize(text)).toThrow('is not a whole number of bytes');
    else expect(parseSize(text)).toBe(bytes);
  });

  it('takes integers as bytes, 0 and the largest safe integer included', () => {
    expect(parseSize(0)).toBe(0);
    expect(parseSize(1_048_576)).toBe(1_048_576);
    expect(parseSize(Number.MAX_SAFE_INTEGER)).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('refuses numbers that are not whole, safe, non-negative byte counts', () => {
    for (const input of [-1, 1.5, Number.MAX_SAFE_INTEGER + 1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => parseSize(input)).toThrow('a number of bytes must be a whole number >= 0');
    }
  });

  it('refuses a size string that overflows safe integers', () => {
    expect(() => parseSize('9000000GiB')).toThrow('is too large');
  });

  it.each([
    '4 mb',
    '4 MiB',
    '4M',
    '4mib',
    '4MIB',
    '-1',
    '-1B',
    '1e3',
    '1e3B',
    '4MiBs',
    '1024',
    '',
    'MiB',
    '.5MB',
    '1.MB',
    '01MB',
    '4TB',
    ' 4MiB',
    '4MiB ',
  ])('refuses the string %j and names the accepted units', (text) => {
    expect(() => parseSize(text)).toThrow(
      `${JSON.stringify(text)} is not a size; use bytes or a number with B, KB, MB, GB, KiB, MiB, GiB`,
    );
  });

  it.each([
    [true, 'true'],
    [null, 'null'],
    [undefined, 'nothing'],
    [[1], 'a list'],
    [{ bytes: 1 }, 'a mapping'],
  ])('refuses the non-size %j', (input, shown) => {
    expect(() => parseSize(input)).toThrow(`${shown} is not a size`);
  });
});

describe('parseDuration', () => {
  it.each([
    ['250ms', 250],
    ['0ms', 0],
    ['5s', 5000],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['72s', 72_000],
    ['0s', 0],
  ])('reads %s as %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it('takes the integer 0 as "disabled"', () => {
    expect(parseDuration(0)).toBe(0);
  });

  it('refuses a bare number other than 0: a unit is required', () => {
    for (const input of [5, 1000, -1, 0.5]) {
      expect(() => parseDuration(input)).toThrow(`${input} is not a duration; a unit is required`);
    }
  });

  it.each(['5', '5 s', '5sec', '1.5s', '-5s', '5S', '1d', 's', '', '05s', '5s '])(
    'refuses the string %j',
    (text) => {
      expect(() => parseDuration(text)).toThrow(`${JSON.stringify(text)} is not a duration`);
    },
  );

  it('refuses non-strings and non-numbers', () => {
    expect(() => parseDuration(true)).toThrow('true is not a duration');
    expect(() => parseDuration(null)).toThrow('null is not a duration');
  });
});

describe('formatSize', () => {
  it.each([
    [0, '0 B'],
    [1, '1 B'],
    [1000, '1,000 B'],
    [1024, '1 KiB'],
    [1536, '1,536 B'],
    [4 * 1024 * 1024, '4 MiB'],
    [1024 * 1024 + 1024, '1,025 KiB'],
    [3 * 1024 ** 3, '3 GiB'],
    [2048 * 1024 ** 3, '2,048 GiB'],
    [1_048_577, '1,048,577 B'],
  ])('formats %d as %s', (bytes, text) => {
    expect(formatSize(bytes)).toBe(text);
  });

  it('reads back with parseSize once the separators are removed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (bytes) => {
        const compact = formatSize(bytes).replaceAll(',', '').replace(' ', '');
        return parseSize(compact) === bytes;
      }),
    );
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [250, '250ms'],
    [1500, '1500ms'],
    [10_000, '10s'],
    [72_000, '72s'],
    [120_000, '2m'],
    [3_600_000, '1h'],
    [5_400_000, '90m'],
  ])('formats %d ms as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('reads back with parseDuration', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 ** 12 }), (ms) => parseDuration(formatDuration(ms)) === ms),
    );
  });
});
