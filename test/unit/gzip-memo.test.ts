/**
 * GzipMemo (src/http/gzip-memo.ts): an answer whose bytes are those the same
 * target was last gzipped from gets that gzip again without compressing; bytes
 * changed in place (a pooled buffer written again) are compressed anew and
 * decode to the new bytes; at most targetsMax targets are kept, the least
 * recently asked for evicted first.
 */
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { gzipOnPool } from '../../src/http/answer-encoding.js';
import { GzipMemo } from '../../src/http/gzip-memo.js';

/** gzipOnPool, counting its calls. */
function countingGzip(): { readonly compress: (bytes: Buffer) => Promise<Buffer>; readonly calls: () => number } {
  let calls = 0;
  return { compress: (bytes) => { calls++; return gzipOnPool(bytes); }, calls: () => calls };
}

const answer = (text: string): Buffer => Buffer.from(text.repeat(200));

describe('the last gzipped answer of a target', () => {
  it('the same bytes get the kept gzip, not a new compression', async () => {
    const { compress, calls } = countingGzip();
    const memo = new GzipMemo(compress);
    const first = await memo.gzip('/api/queues', answer('a'));
    const again = await memo.gzip('/api/queues', answer('a'));
    expect(again).toBe(first);
    expect(calls()).toBe(1);
    expect(gunzipSync(again).equals(answer('a'))).toBe(true);
  });

  it('bytes changed in place, at the same length, are compressed anew and decode to the new bytes', async () => {
    const { compress, calls } = countingGzip();
    const memo = new GzipMemo(compress);
    const pooled = answer('a');
    await memo.gzip('/api/queues', pooled);
    pooled[pooled.length - 1] = 'b'.charCodeAt(0);
    const changed = await memo.gzip('/api/queues', pooled);
    expect(calls()).toBe(2);
    expect(gunzipSync(changed).equals(pooled)).toBe(true);
  });

  it('keeps each target apart and at most targetsMax of them, the least recently asked for evicted', async () => {
    const { compress, calls } = countingGzip();
    const memo = new GzipMemo(compress, 2);
    await memo.gzip('/a', answer('a'));
    await memo.gzip('/b', answer('b'));
    expect(gunzipSync(await memo.gzip('/a', answer('a'))).equals(answer('a'))).toBe(true);
    expect(calls()).toBe(2);
    await memo.gzip('/c', answer('c'));
    expect(calls()).toBe(3);
    await memo.gzip('/a', answer('a'));
    expect(calls()).toBe(3);
    expect(gunzipSync(await memo.gzip('/b', answer('b'))).equals(answer('b'))).toBe(true);
    expect(calls()).toBe(4);
  });
});
