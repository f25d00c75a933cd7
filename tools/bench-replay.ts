/**
 * Replay benchmark: how fast a 1,000,000-record log is folded back into the
 * broker's state at start-up, with and without a snapshot.
 *
 * The workload is what a busy broker writes: persistent AMQP messages into
 * durable queues and MQTT messages for persistent sessions (msg records with
 * 100-byte payloads), with most of them acknowledged (ack records), so replay
 * both builds and tears down queue entries.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Broker } from '../src/core/broker.js';
import { SegmentedLog } from '../src/log/index.js';
import { RecordKind } from '../src/projections/records.js';

const recordsTotal = 1_000_000;

export async function benchReplay(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-replay-'));
  try {
    await buildLog(dir);
    const log = await SegmentedLog.open({ dir });
    const started = performance.now();
    const broker = Broker.open({ log });
    const replayMs = performance.now() - started;
    const replayed = broker.recovery!.recordsReplayed;
    console.log(`replay: ${replayed} records in ${replayMs.toFixed(0)} ms = ${Math.round(replayed / (replayMs / 1000)).toLocaleString('en')} records/s (target ≥ 1,000,000/s)`);
    const snapshotStarted = performance.now();
    await broker.snapshot();
    console.log(`snapshot of that state: ${(performance.now() - snapshotStarted).toFixed(0)} ms`);
    await log.close();
    const reopened = await SegmentedLog.open({ dir });
    const withSnapshotStarted = performance.now();
    const fromSnapshot = Broker.open({ log: reopened });
    const withSnapshotMs = performance.now() - withSnapshotStarted;
    console.log(`start-up without snapshot: ${replayMs.toFixed(0)} ms; with snapshot: ${withSnapshotMs.toFixed(0)} ms (${fromSnapshot.recovery!.recordsReplayed} records after it, ${fromSnapshot.recovery!.queuedMessages} queued messages restored)`);
    await reopened.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function buildLog(dir: string): Promise<void> {
  const log = await SegmentedLog.open({ dir });
  const payload = new Uint8Array(100).fill(42);
  const timestamp = Date.now();
  const batch: Array<{ kind: number; timestamp: number; body: unknown }> = [
    { kind: RecordKind.queue, timestamp, body: { n: 'bench-q', op: 'declare' } },
    { kind: RecordKind.session, timestamp, body: { c: 'bench-session', op: 'open' } },
    { kind: RecordKind.sub, timestamp, body: { c: 'bench-session', f: 'bench/#', qos: 1 } },
  ];
  let written = 0;
  let seq = 1;
  const pending: Promise<unknown>[] = [];
  while (written < recordsTotal) {
    while (batch.length < 10_000 && written + batch.length < recordsTotal) {
      const s = seq++;
      batch.push({ kind: RecordKind.msg, timestamp, body: { t: 'bench/x', p: payload, qos: 1, s: [['bench-session', s, 1]], u: [['bench-q', s]], from: 'bench' } });
      if (s % 10 !== 0) {
        batch.push({ kind: RecordKind.ack, timestamp, body: { q: 'bench-q', s: [s] } });
        batch.push({ kind: RecordKind.ack, timestamp, body: { c: 'bench-session', s: [s] } });
      }
    }
    written += batch.length;
    pending.push(log.append(batch.splice(0)));
    if (pending.length > 8) await pending.shift();
  }
  await Promise.all(pending);
  await log.close();
}
