/**
 * Old segments are released although a few messages in them are still queued
 * (core/segment-release.ts): with tiny segments and retention at 0 bytes, a
 * message queued in a durable AMQP queue, one queued for an offline MQTT
 * session and one ingested document sit in early segments while churn fills
 * many more. The snapshot moves the three to the head of the log; retention
 * then removes their old segments; each still reads back byte for byte, before
 * and after a restart (also one that replays the moves from an older
 * snapshot); the pin follows them; `cairn inspect trace` starts from the copy. A large live backlog is never copied.
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { documentSource } from '../../src/core/collection-documents.js';
import { findDocuments } from '../../src/http/collection-query.js';
import { parseQuery } from '../../src/http/query.js';
import { traceMessages, type TracedRecord } from '../../src/inspect/trace.js';
import { oldestLiveMessage } from '../../src/projections/pins.js';
import { RecordKind } from '../../src/projections/records.js';
import { encodeState } from '../../src/projections/snapshot-codec.js';
import { inspect } from '../support/cli-run.js';
import { WorkloadDriver } from '../support/inspect-workload.js';
import { tempDirectory } from '../support/kit.js';

const logOptions = { segmentBytesMax: 4096, retentionBytes: 0 } as const;
const queuedBody = 'kept-in-queue:' + 'q'.repeat(300);
const sessionPayload = Uint8Array.from({ length: 256 }, (_, i) => i);

async function churn(driver: WorkloadDriver, rounds: number): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await driver.amqpPublish('', 'churn', `churn ${i} ${'c'.repeat(200)}`);
    expect(await driver.getAndSettle('churn', 'ack')).toBeDefined();
  }
}

function references(driver: WorkloadDriver): { queue: number; session: number; document: number } {
  const state = driver.broker.state;
  return {
    queue: state.queues.get('kept')!.pending.first()!.lsn,
    session: state.sessions.get('cold')!.pending.first()!.lsn,
    document: [...state.collections.get('readings')!.documents.values()][0]!,
  };
}

describe('releasing old segments that a few queued messages hold', () => {
  let directory: { path: string; remove(): void };
  beforeEach(() => { directory = tempDirectory('cairn-segment-release-'); });
  afterEach(() => directory.remove());

  it('moves the live messages and the document out, removes the old segments, and everything reads back after a restart', async () => {
    let driver = await WorkloadDriver.open(directory.path, { log: logOptions });
    await driver.connect('cold');
    await driver.subscribe('cold', 'cold/#', 1);
    driver.detach('cold');
    await driver.declareQueue('kept');
    await driver.declareQueue('churn');
    await driver.connect('publisher', true);
    await driver.amqpPublish('', 'kept', queuedBody);
    await driver.publish('publisher', 'cold/a', sessionPayload, 1);
    await driver.publish('publisher', 'sensors/t1', JSON.stringify({ celsius: 21.5 }), 1);
    const before = references(driver);
    const publishedAt = driver.log.readRecord(before.queue).timestamp;
    // Retention needs an anchor snapshot before the segments it removes: snapshots after each stretch of churn.
    for (let round = 0; round < 3; round++) {
      await churn(driver, 40);
      await driver.snapshot();
    }

    const after = references(driver);
    for (const key of ['queue', 'session', 'document'] as const) {
      expect(after[key], `${key} moved`).toBeGreaterThan(before[key]);
      expect(driver.log.firstLsn, `the ${key}'s old segment is gone`).toBeGreaterThan(before[key]);
    }
    expect(oldestLiveMessage(driver.broker.state)!.lsn).toBeGreaterThanOrEqual(driver.log.firstLsn);
    // The copy of the message is a msg record naming where it came from; its destinations were not enqueued twice.
    const copy = driver.log.readRecord(after.queue);
    expect(copy.kind).toBe(RecordKind.msg);
    expect((copy.body as { movedFrom?: number }).movedFrom).toBe(before.queue);
    // Message TTLs count from the first record: the copy carries its time, and the message reads back with it.
    expect((copy.body as { at?: number }).at).toBe(publishedAt);
    expect(driver.broker.messageOf({ lsn: after.queue, held: undefined }).timestamp).toBe(publishedAt);
    expect(driver.broker.state.queues.get('kept')!.pending.size).toBe(1);
    expect(driver.broker.state.sessions.get('cold')!.pending.size).toBe(1);

    const trace = await inspect('trace', '--data', directory.path, '--queue', 'kept', '--seq', '1');
    expect(trace.out).toContain(`a copy of the msg record at LSN ${before.queue}`);
    expect(trace.out).toContain('still pending');
    const live = encodeState(driver.broker.state);
    await driver.close();

    // Without the newest snapshot, start-up replays the moves from an older one (written before them): same state.
    const snapshots = fs.readdirSync(directory.path).filter((f) => f.endsWith('.snap')).sort();
    expect(snapshots.length).toBeGreaterThan(1);
    fs.rmSync(join(directory.path, snapshots[snapshots.length - 1]!));
    driver = await WorkloadDriver.open(directory.path, { log: logOptions });
    expect(driver.broker.recovery!.recordsReplayed).toBeGreaterThan(0);
    expect(encodeState(driver.broker.state)).toEqual(live);
    const delivery = await driver.getAndSettle('kept', 'ack');
    expect(new TextDecoder().decode(delivery!.message.body)).toBe(queuedBody);
    const link = await driver.connect('cold');
    expect(link.received.map((p) => [...p.payload])).toEqual([[...sessionPayload]]);
    const source = documentSource(driver.log, driver.broker.state.collections.get('readings')!, driver.log.nextLsn - 1);
    const found = await findDocuments(source, parseQuery({ projection: { _id: 0 } }), { chunkDocuments: 10, chunkMs: 1000, examinedMax: 100 });
    expect(found.documents).toHaveLength(1);
    expect(found.documents[0]).toMatchObject({ celsius: 21.5 });
    await driver.close();
  });

  it('never copies a backlog: segments that are mostly live stay, pinned', async () => {
    const driver = await WorkloadDriver.open(directory.path, { log: logOptions });
    await driver.declareQueue('backlog');
    await driver.declareQueue('churn');
    await churn(driver, 40);
    // 8 messages of 1.5 KB (the driver's queue bound) fill three segments; the churn after them is small.
    for (let i = 0; i < 8; i++) await driver.amqpPublish('', 'backlog', `${i} ${'b'.repeat(1500)}`);
    const firstReference = driver.broker.state.queues.get('backlog')!.pending.first()!.lsn;
    for (let round = 0; round < 3; round++) {
      await churn(driver, 10);
      await driver.snapshot();
    }
    expect(driver.broker.state.queues.get('backlog')!.pending.first()!.lsn).toBe(firstReference);
    // Retention did run (the segments before the backlog went), but stopped at the backlog's first message.
    expect(driver.log.firstLsn).toBeGreaterThan(1);
    expect(driver.log.firstLsn).toBeLessThanOrEqual(firstReference);
    await driver.close();
  });

  it('trace shows the move as a step when the original record is still there', () => {
    const original: TracedRecord = { lsn: 10, timestamp: 1, kind: RecordKind.msg, body: { t: 'k', p: new Uint8Array([1]), x: '', u: [['q', 1]] } };
    const moved: TracedRecord = { lsn: 90, timestamp: 2, kind: RecordKind.msg, body: { t: 'k', p: new Uint8Array([1]), x: '', u: [['q', 1]], movedFrom: 10 } };
    const traces = traceMessages(() => [original, moved], { by: 'seq', destination: 'queue q', seq: 1 }, 5);
    expect(traces).toHaveLength(1);
    expect(traces[0]!.record.lsn).toBe(10);
    expect(traces[0]!.destinations[0]!.steps.map((s) => [s.lsn, s.what])).toEqual([[90, 'moved to LSN 90 (copied out of an old segment so that retention could remove it)']]);
  });
});
