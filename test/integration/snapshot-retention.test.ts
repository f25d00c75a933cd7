/**
 * Periodic snapshots plus retention on a real SegmentedLog with tiny segments:
 * a broker that has run for thousands of records keeps only the newest
 * segments, restarts from its newest snapshot with a bounded replay, and comes
 * back with exactly the state it had. With an archive directory the retired
 * segments are moved there instead of being deleted.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { openLogReader, SegmentedLog, type LogOptions } from '../../src/log/index.js';
import { encodeState, type EncodedState } from '../../src/projections/snapshot-codec.js';
import { WorkloadDriver } from '../support/inspect-workload.js';

const snapshotEveryRecords = 200;
const segmentBytesMax = 4096;
const retentionBytes = 16 * 1024;
const subscribers = ['sub-a', 'sub-b', 'sub-c'];
const queues = ['q-orders', 'q-audit'];

/** MQTT persistent sessions with QoS 1 acks, sessions going away and coming back, AMQP durable queues with acks and rejects. */
async function runWorkload(w: WorkloadDriver, minRecords: number): Promise<void> {
  await w.connect('pub');
  for (const id of subscribers) {
    await w.connect(id);
    await w.subscribe(id, `t/${id}/#`, 1);
    await w.subscribe(id, 'all/#', 1);
  }
  for (const q of queues) {
    await w.declareQueue(q);
    await w.bind(q, 'amq.topic', 'all.#');
  }
  let round = 0;
  while (w.broker.state.lastLsn < minRecords) {
    round++;
    await w.publish('pub', `all/r${round % 7}`, `broadcast ${round}`, 1, round % 11 === 0, (round % 60000) + 1);
    const id = subscribers[round % subscribers.length]!;
    if (w.sessions.has(id)) {
      await w.publish('pub', `t/${id}/x`, `direct ${round}`, 1, false, (round % 60000) + 1);
      await w.pubackAll(id);
    }
    for (const q of queues) {
      await w.amqpPublish('', q, `amqp ${round}`);
      await w.getAndSettle(q, round % 5 === 0 ? 'reject' : 'ack');
      await w.getAndSettle(q, 'ack');
    }
    // A persistent session goes offline for a while (messages pile up, within the limit) and comes back.
    if (round % 13 === 0 && w.sessions.has(id)) w.detach(id);
    else if (round % 13 === 3 && !w.sessions.has(id)) {
      await w.connect(id);
      await w.pubackAll(id);
    }
  }
  // A periodic snapshot may still be in flight (snapshot() runs in the background): let it finish.
  await waitForSnapshots(w);
}

async function waitForSnapshots(w: WorkloadDriver): Promise<void> {
  await w.broker.flush();
  for (let i = 0; i < 50 && (w.broker as unknown as { snapshotting: boolean }).snapshotting; i++) await new Promise((r) => setTimeout(r, 10));
  await w.broker.flush();
}

function segmentFiles(dir: string): string[] {
  return fs.readdirSync(dir).filter((f) => f.endsWith('.seg')).sort();
}

function snapshotFiles(dir: string): string[] {
  return fs.readdirSync(dir).filter((f) => f.endsWith('.snap')).sort();
}

const firstLsnOf = (file: string): number => Number(file.slice(0, 20));

let root: string;
beforeAll(() => {
  root = fs.mkdtempSync(join(os.tmpdir(), 'cairn-retention-'));
});
afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

describe('periodic snapshots with retention (tiny segments)', () => {
  const logOptions: Omit<LogOptions, 'dir'> = { segmentBytesMax, retentionBytes };
  let dir: string;
  let w: WorkloadDriver;
  let liveState: EncodedState;
  let lastLsn: number;

  beforeAll(async () => {
    dir = join(root, 'data');
    w = await WorkloadDriver.open(dir, { log: logOptions, snapshotEveryRecords });
    await runWorkload(w, 3000);
    lastLsn = w.broker.state.lastLsn;
    liveState = encodeState(w.broker.state);
    await w.close();
  });

  it('removed the old segments: the log starts well after LSN 1 and only the newest segments remain', async () => {
    expect(lastLsn).toBeGreaterThanOrEqual(3000);
    expect(w.log.firstLsn).toBeGreaterThan(1);
    const files = segmentFiles(dir);
    expect(files).not.toContain('00000000000000000001.seg');
    expect(firstLsnOf(files[0]!)).toBe(w.log.firstLsn);
    // A few thousand records at ~4 KiB per segment would be dozens of segments; retention keeps about retentionBytes of them.
    const keptBytes = files.reduce((sum, f) => sum + fs.statSync(join(dir, f)).size, 0);
    expect(files.length).toBeLessThan(15);
    expect(keptBytes).toBeLessThan(retentionBytes + 2 * segmentBytesMax + snapshotEveryRecords * 200);
    // The reader agrees: one unbroken chain from firstLsn to the last record, nothing damaged.
    const report = openLogReader(dir).verify();
    expect(report.ok).toBe(true);
    expect(report.firstLsn).toBe(w.log.firstLsn);
    expect(report.lastLsn).toBe(lastLsn);
  });

  it('left a snapshot that start-up can use (covering a retained LSN, not older than the log start)', () => {
    const snaps = snapshotFiles(dir);
    expect(snaps.length).toBeGreaterThan(0);
    const newest = firstLsnOf(snaps[snaps.length - 1]!);
    expect(newest).toBeGreaterThanOrEqual(w.log.firstLsn - 1);
    expect(newest).toBeLessThanOrEqual(lastLsn);
    expect(lastLsn - newest).toBeLessThan(2 * snapshotEveryRecords);
    // Obsolete snapshots were removed along with the segments they needed.
    for (const snap of snaps) expect(firstLsnOf(snap) + 1).toBeGreaterThanOrEqual(w.log.firstLsn);
  });

  it('reopens to the live state with a replay bounded by the snapshot interval, not by the history', async () => {
    const log = await SegmentedLog.open({ dir, ...logOptions });
    try {
      const broker = Broker.open({ log, limits: { snapshotEveryRecords, sessionQueueMessagesMax: 8, queueReadyMessagesMax: 8 } });
      expect(encodeState(broker.state)).toEqual(liveState);
      expect(log.nextLsn).toBe(lastLsn + 1);
      expect(log.firstLsn).toBe(w.log.firstLsn);
      const recovery = broker.recovery!;
      expect(recovery.snapshotLsn).toBeGreaterThanOrEqual(log.firstLsn - 1);
      expect(recovery.snapshotLsn + recovery.recordsReplayed).toBe(lastLsn);
      expect(recovery.recordsReplayed).toBeLessThan(2 * snapshotEveryRecords);
      expect(recovery.recordsReplayed).toBeLessThan(lastLsn / 5);
      expect(recovery.sessions).toBe(liveState.sessions.length);
      expect(recovery.durableQueues).toBe(queues.length);
    } finally {
      await log.close();
    }
  });
});

describe('retention with an archive directory', () => {
  let dir: string;
  let archiveDir: string;
  let w: WorkloadDriver;
  let liveState: EncodedState;
  let lastLsn: number;

  beforeAll(async () => {
    dir = join(root, 'archived-data');
    archiveDir = join(root, 'archive');
    w = await WorkloadDriver.open(dir, { log: { segmentBytesMax, retentionBytes, archiveDir }, snapshotEveryRecords });
    await runWorkload(w, 2000);
    lastLsn = w.broker.state.lastLsn;
    liveState = encodeState(w.broker.state);
    await w.close();
  });

  it('moves the retired segments to the archive: together they are the whole history from LSN 1', () => {
    expect(w.log.firstLsn).toBeGreaterThan(1);
    const archived = segmentFiles(archiveDir);
    const kept = segmentFiles(dir);
    expect(archived[0]).toBe('00000000000000000001.seg');
    expect(archived.filter((f) => kept.includes(f))).toEqual([]);
    expect(firstLsnOf(kept[0]!)).toBe(w.log.firstLsn);
    // The archive is a readable, unbroken log of LSN 1..firstLsn-1, and the data directory carries on from there.
    const archive = openLogReader(archiveDir).verify();
    expect(archive.ok).toBe(true);
    expect(archive.firstLsn).toBe(1);
    expect(archive.lastLsn).toBe(w.log.firstLsn - 1);
    expect(archive.badSegments).toEqual([]);
    let expected = 1;
    for (const record of openLogReader(archiveDir).read({ lsn: 1 })) expect(record.lsn).toBe(expected++);
    for (const record of openLogReader(dir).read({ lsn: w.log.firstLsn })) expect(record.lsn).toBe(expected++);
    expect(expected).toBe(lastLsn + 1);
  });

  it('reopens to the live state from the data directory alone', async () => {
    const log = await SegmentedLog.open({ dir, segmentBytesMax, retentionBytes, archiveDir });
    try {
      const broker = Broker.open({ log, limits: { snapshotEveryRecords } });
      expect(encodeState(broker.state)).toEqual(liveState);
      expect(broker.recovery!.recordsReplayed).toBeLessThan(2 * snapshotEveryRecords);
    } finally {
      await log.close();
    }
  });
});
