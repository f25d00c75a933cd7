/**
 * src/http/answer-encoding.ts: which Accept-Encoding values admit gzip
 * [RFC 9110 12.5.3], and gzipOnPool's bytes decode to the input.
 */
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { acceptsGzip, gzipOnPool } from '../../src/http/answer-encoding.js';

describe('acceptsGzip', () => {
  it.each([
    ['gzip', true],
    ['gzip, deflate', true],
    ['gzip, deflate, br, zstd', true],
    ['x-gzip', true],
    ['GZIP;Q=0.5', true],
    ['br;q=1.0, gzip;q=0.001', true],
    ['*', true],
    ['deflate, *;q=0.1', true],
    ['identity', false],
    ['deflate, br', false],
    ['gzip;q=0', false],
    ['gzip; q=0.000', false],
    ['*;q=0', false],
    ['gzip;q=0, *', false],
    ['', false],
  ] as const)('%j admits gzip: %s', (header, expected) => {
    expect(acceptsGzip(header)).toBe(expected);
  });

  it('no Accept-Encoding field: identity only', () => {
    expect(acceptsGzip(undefined)).toBe(false);
  });
});

describe('gzipOnPool', () => {
  it('decodes to the bytes it was given', async () => {
    const text = Buffer.from(Array.from({ length: 5000 }, (_, i) => `{"name":"queue-${i}","messages":${i % 7}}`).join(','));
    const gzipped = await gzipOnPool(text);
    expect(gzipped.length).toBeLessThan(text.length / 4);
    expect(gunzipSync(gzipped).equals(text)).toBe(true);
  });
});
