/**
 * Long-lived bodies do not pin the socket read chunk they were framed from
 * (src/core/unpinned-bytes.ts): the check itself, and a retained value set
 * through the broker core from a view into a 64 KiB buffer.
 */
import { describe, expect, it } from 'vitest';
import { MemoryLog } from '../../src/core/record-log.js';
import { pinsLargerBuffer, unpinned } from '../../src/core/unpinned-bytes.js';
import { BrokerHarness } from '../support/broker-harness.js';

function viewIntoChunk(text: string): Buffer {
  const chunk = Buffer.alloc(64 * 1024);
  chunk.write(text, 5000);
  return chunk.subarray(5000, 5000 + Buffer.byteLength(text));
}

describe('unpinned bytes', () => {
  it('copies a view into a much larger buffer, keeps a buffer that owns its memory or a small pool slice', () => {
    const view = viewIntoChunk('retained status');
    expect(pinsLargerBuffer(view)).toBe(true);
    const copy = unpinned(view);
    expect(Buffer.from(copy).toString()).toBe('retained status');
    expect(copy.buffer.byteLength).toBeLessThanOrEqual(Buffer.poolSize);
    const own = new Uint8Array(100);
    expect(unpinned(own)).toBe(own);
    const pooled = Buffer.from('from the pool');
    expect(unpinned(pooled)).toBe(pooled);
  });

  it('a retained value published from a view into a socket chunk is kept as its own bytes', async () => {
    const harness = new BrokerHarness(new MemoryLog());
    await harness.run({ t: 'connect', c: 'c0', clean: true });
    await harness.run({ t: 'publish', c: 'c0', topic: 'a/b', p: viewIntoChunk('on') as Uint8Array<ArrayBuffer>, qos: 1, retain: true, id: 1, props: undefined });
    const retained = harness.broker.state.retained.get('a/b');
    expect(Buffer.from(retained!.payload).toString()).toBe('on');
    expect(retained!.payload.buffer.byteLength).toBeLessThan(64 * 1024);
  });
});
