/**
 * `cairn recover` on a data directory whose beginning retention has removed:
 * the snapshot path (newest usable snapshot S <= N; records from the oldest
 * message still queued in S — or from S+1 — up to N copied). The recovered directory opens to the state the live
 * broker had at N, the source is not touched, appends carry on at N+1, and a
 * point before the retained history is refused naming the available range.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { SegmentedLog } from '../../src/log/index.js';
import { encodeState, type EncodedState } from '../../src/projections/snapshot-codec.js';
import { recover } from '../support/cli-run.js';
import { WorkloadDriver } from '../support/inspect-workload.js';


const snapshotEveryRecords = 150;
const subscribers = ['sub-a', 'sub-b'];

interface Point { readonly state: EncodedState; readonly time: number }

/** The live state after every command of the workload, by the LSN it ended at. */
const points = new Map<number, Point>();

async function step(w: WorkloadDriver, command: () => Promise<unknown>): Promise<void> {
  await command();
  points.set(w.broker.state.lastLsn, { state: encodeState(w.broker.state), time: w.broker.state.lastTimestamp });
}

async function runWorkload(w: WorkloadDriver, minRecords: number): Promise<void> {
  await step(w, () => w.connect('pub'));
  for (const id of subscribers) {
    await step(w, () => w.connect(id));
    await step(w, () => w.subscribe(id, 'all/#', 1));
  }
  await step(w, () => w.declareQueue('q1'));
  await step(w, () => w.bind('q1', 'amq.topic', 'all.#'));
  let round = 0;
  while (w.broker.state.lastLsn < minRecords) {
    round++;
    const packetId = (round % 60000) + 1;
    await step(w, () => w.publish('pub', `all/r${round % 5}`, `m${round}`, 1, round % 9 === 0, packetId));
    const id = subscribers[round % subscribers.length]!;
    if (w.sessions.has(id)) await step(w, () => w.pubackAll(id));
    await step(w, () => w.amqpPublish('', 'q1', `amqp ${round}`));
    await step(w, () => w.getAndSettle('q1', 'ack'));
    await step(w, () => w.getAndSettle('q1', round % 4 === 0 ? 'reject' : 'ack'));
    if (round % 10 === 0 && w.sessions.has(id)) w.detach(id);
    else if (round % 10 === 4 && !w.sessions.has(id)) await step(w, () => w.connect(id));
  }
  await w.broker.flush();
  for (let i = 0; i < 50 && (w.broker as unknown as { snapshotting: boolean }).snapshotting; i++) await new Promise((r) => setTimeout(r, 10));
  await w.broker.flush();
}

function listing(dir: string): Array<[string, number, string]> {
  return fs.readdirSync(dir).sort().map((f) => {
    const bytes = fs.readFileSync(join(dir, f));
    return [f, bytes.length, createHash('sha256').update(bytes).digest('hex')];
  });
}

const lsnOf = (file: string): number => Number(file.slice(0, 20));

let root: string;
let dir: string;
let firstLsn: number;
let lastLsn: number;
let snapshots: number[];
let before: Array<[string, number, string]>;

beforeAll(async () => {
  root = fs.mkdtempSync(join(os.tmpdir(), 'cairn-recover-retention-'));
  dir = join(root, 'data');
  const w = await WorkloadDriver.open(dir, { log: { segmentBytesMax: 4096, retentionBytes: 12 * 1024 }, snapshotEveryRecords });
  await runWorkload(w, 2500);
  lastLsn = w.broker.state.lastLsn;
  firstLsn = w.log.firstLsn;
  await w.close();
  snapshots = fs.readdirSync(dir).filter((f) => f.endsWith('.snap')).map(lsnOf).sort((a, b) => a - b);
  before = listing(dir);
});

afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

/** A recorded point strictly after a retained snapshot, and before the end of the log. */
function pickTarget(): { lsn: number; snapshotLsn: number; point: Point } {
  for (const snapshotLsn of snapshots) {
    if (snapshotLsn + 1 < firstLsn) continue;
    const candidates = [...points.keys()].filter((lsn) => lsn > snapshotLsn + 5 && lsn < lastLsn && !snapshots.includes(lsn)).sort((a, b) => a - b);
    if (candidates.length > 0) return { lsn: candidates[0]!, snapshotLsn, point: points.get(candidates[0]!)! };
  }
  throw new Error(`no recorded point after a retained snapshot (snapshots ${snapshots.join(',')}, firstLsn ${firstLsn})`);
}

describe('recover after retention removed the beginning of the log', () => {
  it('the workload left a log whose history starts after LSN 1, with snapshots inside the retained range', () => {
    expect(firstLsn).toBeGreaterThan(1000);
    expect(fs.existsSync(join(dir, '00000000000000000001.seg'))).toBe(false);
    expect(snapshots.some((s) => s + 1 >= firstLsn)).toBe(true);
  });

  it('--lsn N rebuilds from the snapshot: the new directory opens to the state at N and appends carry on at N+1', async () => {
    const { lsn, snapshotLsn, point } = pickTarget();
    const target = join(root, 'recovered-lsn');
    const r = await recover('--from', dir, '--to', target, '--lsn', String(lsn));
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const usedSnapshot = Math.max(...snapshots.filter((s) => s <= lsn && s + 1 >= firstLsn));
    expect(usedSnapshot).toBeGreaterThanOrEqual(snapshotLsn);
    expect(r.out).toContain(`state right after LSN ${lsn}`);
    expect(listing(dir)).toEqual(before);

    // What recover leaves is what retention leaves: the snapshot, and segments from the oldest message
    // still queued in it (queues hold references into the log), or right after it when nothing is queued.
    expect(fs.readdirSync(target).filter((f) => f.endsWith('.snap'))).toEqual([`${String(usedSnapshot).padStart(20, '0')}.snap`]);
    const segments = fs.readdirSync(target).filter((f) => f.endsWith('.seg')).sort();
    const copyFrom = lsnOf(segments[0]!);
    expect(copyFrom).toBeLessThanOrEqual(usedSnapshot + 1);
    expect(r.out).toContain(`from snapshot at LSN ${usedSnapshot} + records ${copyFrom}..${lsn} (${lsn - copyFrom + 1} record(s) copied)`);

    let log = await SegmentedLog.open({ dir: target });
    expect(log.firstLsn).toBe(copyFrom);
    expect(log.nextLsn).toBe(lsn + 1);
    let broker = Broker.open({ log });
    expect(encodeState(broker.state)).toEqual(point.state);
    expect(broker.recovery!.snapshotLsn).toBe(usedSnapshot);
    expect(broker.recovery!.recordsReplayed).toBe(lsn - usedSnapshot);
    // Every queued message can be read back from the recovered directory.
    const queued = [...broker.state.sessions.values(), ...broker.state.queues.values()].flatMap((d) => [...d.pending.entries()]);
    expect(queued.length).toBeGreaterThan(0);
    for (const entry of queued) expect(broker.messageOf(entry).lsn).toBe(entry.lsn);
    if (copyFrom < usedSnapshot + 1) expect(Math.min(...queued.map((e) => e.lsn))).toBeLessThanOrEqual(usedSnapshot);

    // The recovered broker carries on: its next record is N+1, and it survives a restart.
    const { session, durable } = broker.mqtt.connect('after-recovery', false, { sendPublish: () => true, sendPubrel: () => {}, takenOver: () => undefined, readFailed: (error) => { throw error; } });
    await durable;
    session.start();
    await broker.flush();
    expect(broker.state.lastLsn).toBe(lsn + 1);
    const afterAppend = encodeState(broker.state);
    await log.close();

    log = await SegmentedLog.open({ dir: target });
    expect(log.nextLsn).toBe(lsn + 2);
    broker = Broker.open({ log });
    expect(encodeState(broker.state)).toEqual(afterAppend);
    expect(broker.state.sessions.has('after-recovery')).toBe(true);
    await log.close();
    expect(listing(dir)).toEqual(before);
  });

  it('--lsn at a snapshot LSN copies no record and opens to that snapshot', async () => {
    const snapshotLsn = snapshots.find((s) => s + 1 >= firstLsn && points.has(s));
    // Periodic snapshots are taken mid-command; only check when one fell on a command boundary we recorded.
    const usable = snapshots.filter((s) => s + 1 >= firstLsn);
    const s = snapshotLsn ?? usable[usable.length - 1]!;
    const target = join(root, 'recovered-at-snapshot');
    const r = await recover('--from', dir, '--to', target, '--lsn', String(s));
    expect(r.code).toBe(0);
    // Only the records that queued messages still refer to are copied (none when nothing is queued).
    const copyFrom = lsnOf(fs.readdirSync(target).filter((f) => f.endsWith('.seg')).sort()[0]!);
    expect(r.out).toContain(`from snapshot at LSN ${s} + records ${copyFrom}..${s} (${s - copyFrom + 1} record(s) copied)`);
    const log = await SegmentedLog.open({ dir: target });
    expect(log.nextLsn).toBe(s + 1);
    const broker = Broker.open({ log });
    expect(broker.state.lastLsn).toBe(s);
    expect(broker.recovery!.recordsReplayed).toBe(0);
    if (snapshotLsn !== undefined) expect(encodeState(broker.state)).toEqual(points.get(snapshotLsn)!.state);
    for (const d of [...broker.state.sessions.values(), ...broker.state.queues.values()]) {
      for (const entry of d.pending.entries()) expect(broker.messageOf(entry).lsn).toBe(entry.lsn);
    }
    await log.close();
    expect(listing(dir)).toEqual(before);
  });

  it('--time T after retention recovers to the last record at or before T', async () => {
    const { lsn, point } = pickTarget();
    const target = join(root, 'recovered-time');
    const r = await recover('--from', dir, '--to', target, '--time', new Date(point.time).toISOString());
    expect(r.code).toBe(0);
    expect(r.out).toContain(`state right after LSN ${lsn}`);
    const log = await SegmentedLog.open({ dir: target });
    expect(log.nextLsn).toBe(lsn + 1);
    expect(encodeState(Broker.open({ log }).state)).toEqual(point.state);
    await log.close();
  });

  it('refuses a point before the retained history with exit code 2, naming the range; nothing is created', async () => {
    const range = `the log holds LSN ${firstLsn}..${lastLsn}; LSN 1..${firstLsn - 1} were removed by retention`;
    const early = [...points.keys()].filter((l) => l < firstLsn - 1).sort((a, b) => a - b)[0]!;
    const byLsn = await recover('--from', dir, '--to', join(root, 'never-lsn'), '--lsn', String(early));
    expect(byLsn.code).toBe(2);
    expect(byLsn.err).toContain(`LSN ${early} is before the retained history`);
    expect(byLsn.err).toContain(range);
    expect(byLsn.err.trim().split('\n')).toHaveLength(1);
    expect(fs.existsSync(join(root, 'never-lsn'))).toBe(false);

    const byTime = await recover('--from', dir, '--to', join(root, 'never-time'), '--time', new Date(points.get(early)!.time).toISOString());
    expect(byTime.code).toBe(2);
    expect(byTime.err).toContain('no record at or before');
    expect(byTime.err).toContain(range);
    expect(fs.existsSync(join(root, 'never-time'))).toBe(false);
    expect(listing(dir)).toEqual(before);
  });

  it('refuses (exit 2, naming the range) a retained LSN older than every usable snapshot: there is no state to start from', async () => {
    // Retention drops segments covered by the newest snapshot and the snapshots older than the new log start,
    // so the oldest retained records usually precede the oldest retained snapshot.
    const oldestUsable = snapshots.find((s) => s + 1 >= firstLsn)!;
    if (oldestUsable <= firstLsn - 1) return; // a snapshot sits right at the log start: no such LSN
    const lsn = firstLsn;
    const target = join(root, 'never-gap');
    const r = await recover('--from', dir, '--to', target, '--lsn', String(lsn));
    expect(r.code).toBe(2);
    expect(r.err).toContain(`cannot recover to LSN ${lsn}: no valid snapshot at or before it and the log holds LSN ${firstLsn}..${lastLsn}`);
    expect(fs.existsSync(target)).toBe(false);
    expect(listing(dir)).toEqual(before);
  });
});
