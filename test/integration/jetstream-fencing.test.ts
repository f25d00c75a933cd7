/**
 * Fencing of the JetStream log (issue 17): exactly one node writes. A writer
 * that takes over publishes a fence; the writer before it, still appending,
 * has its appends refused (every append names the sequence it must follow),
 * fails for good, and none of its records lands after the fence. The writer
 * lease (a KV key taken with create, renewed with compare-and-set, expiring
 * with the bucket's max age) cannot be taken while its holder renews it, and
 * is lost by a holder that stopped renewing once another node took it.
 * Runs on a real three-node nats-server cluster (tools/nats-cluster.ts).
 */
import { describe, expect, it } from 'vitest';
import { JetStreamLog } from '../../src/log/jetstream/jetstream-log.js';
import { WriterLease } from '../../src/log/jetstream/writer-lease.js';
import { until } from '../support/kit.js';
import { useNatsCluster } from '../support/nats-cluster-hooks.js';

const nats = useNatsCluster();

const record = (writer: string, n: number) => ({ kind: 7, timestamp: n, body: { writer, n } });

describe('fencing the JetStream log', () => {
  it('a new writer fences the old one: the old one\'s appends are refused, it fails, and no record interleaves', async () => {
    const address = { servers: nats.cluster.servers.split(','), stream: 'fencing-writers', tls: false };
    const failures: string[] = [];
    const first = await JetStreamLog.open({ address, fence: true, onFailed: (error) => failures.push(error.code) });
    await first.append([1, 2, 3].map((n) => record('first', n)));

    // The first writer keeps appending, pipelined, while the second one takes over.
    const outcomes: Array<Promise<'acked' | 'refused'>> = [];
    const firstLsns: number[] = [];
    const appendFirst = (n: number): void => {
      firstLsns.push(first.nextLsn);
      outcomes.push(first.append([record('first', n)]).then(() => 'acked' as const, () => 'refused' as const));
    };
    for (let n = 4; n <= 50; n++) appendFirst(n);
    const second = await JetStreamLog.open({ address, fence: true });
    for (let n = 51; n <= 60 && first.failed === undefined; n++) appendFirst(n);
    const secondLsns = await second.append([1, 2, 3].map((n) => record('second', n)));
    const results = await Promise.all(outcomes);
    await until(() => first.failed !== undefined, 'the first writer to fail');

    expect(first.failed?.code).toBe('EDEPOSED');
    expect(failures).toEqual(['EDEPOSED']);
    await expect(first.append([record('first', 99)])).rejects.toMatchObject({ code: 'EDEPOSED' });
    expect(results.filter((r) => r === 'refused').length).toBeGreaterThan(0);

    // What the stream holds, read by a third node: the first writer's acknowledged records, the fence, the second's.
    const reader = await JetStreamLog.open({ address, connection: nats.connection });
    const stored = [...reader.read()].map((r) => ({ lsn: r.lsn, ...(r.body as { writer: string; n: number }) }));
    const fenceLsn = secondLsns[0]! - 1;
    expect(() => reader.readRecord(fenceLsn)).toThrow(expect.objectContaining({ code: 'ENORECORD', message: expect.stringContaining('fence') as unknown }));
    const acked = firstLsns.filter((_lsn, i) => results[i] === 'acked');
    // The first writer fenced the empty stream (LSN 1), so its records start at 2.
    expect(stored.filter((r) => r.writer === 'first').map((r) => r.lsn)).toEqual([2, 3, 4, ...acked]);
    expect(stored.filter((r) => r.writer === 'second').map((r) => r.lsn)).toEqual(secondLsns);
    expect(Math.max(...stored.filter((r) => r.writer === 'first').map((r) => r.lsn))).toBeLessThan(fenceLsn);
    await Promise.all([reader.close(), second.close(), first.close()]);
  });

  it('the writer lease: held while renewed, taken by another node once its holder stops renewing, and the old holder hears it lost it', async () => {
    const stream = 'fencing-lease';
    const lost: string[] = [];
    const ttlMs = 1_000;
    const holder = await WriterLease.tryAcquire({ connection: nats.connection, stream, holder: 'node-a', ttlMs, onLost: (reason) => lost.push(reason) });
    if (!(holder instanceof WriterLease)) throw new Error(`node-a could not take a fresh lease: held by ${holder.heldBy}`);

    // Renewed every third of the TTL: two TTLs later, node-b still cannot take it.
    const deadline = Date.now() + 2 * ttlMs;
    while (Date.now() < deadline) {
      const attempt = await WriterLease.tryAcquire({ connection: nats.connection, stream, holder: 'node-b', ttlMs });
      expect(attempt).toEqual({ heldBy: 'node-a' });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }

    // node-a stops renewing (paused); node-b takes the lease after the key expires.
    holder.stop();
    const started = performance.now();
    const taker = await WriterLease.acquire({ connection: nats.connection, stream, holder: 'node-b', ttlMs });
    const takenAfterMs = performance.now() - started;
    expect(takenAfterMs).toBeGreaterThan(ttlMs / 2);
    expect(takenAfterMs).toBeLessThan(5 * ttlMs);

    // node-a resumes: its next renewal names a revision that is gone.
    await holder.renew();
    await until(() => lost.length > 0, 'node-a to hear it lost the lease');
    expect(lost[0]).toMatch(/another node took the writer lease/);
    await taker.release();
    const after = await WriterLease.tryAcquire({ connection: nats.connection, stream, holder: 'node-c', ttlMs });
    expect(after).toBeInstanceOf(WriterLease);
    await (after as WriterLease).release();
  });
});
