/**
 * The broker core under SIGKILL: a child runs the core on a real segmented log
 * with a scripted workload (persistent AMQP publishes into a durable queue
 * whose consumer acks the even ones; MQTT QoS 1 publishes for an offline
 * persistent session) and is killed at random moments. After each kill the
 * recovered state must equal the replay of the durable log, every confirmed
 * message must be there unless its ack was durable, and no durably acked
 * message may come back.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { SegmentedLog } from '../../src/log/index.js';
import { apply } from '../../src/projections/apply.js';
import { encodeState } from '../../src/projections/snapshot-codec.js';
import { initialState } from '../../src/projections/state.js';
import { tempDataDir } from '../support/broker-process.js';
import { announceSeed, seededRandom } from '../support/kit.js';

const fixture = resolve(import.meta.dirname, 'fixtures/core-workload.mjs');

function runUntilKilled(dir: string, start: number, killAfterMs: number): Promise<string[]> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [fixture, dir, String(start)], { stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: string[] = [];
    let buffered = '';
    let errors = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        if (line === 'ready') setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => { errors += chunk.toString(); });
    child.on('exit', (code, signal) => (signal === 'SIGKILL' ? done(lines) : fail(new Error(`child exited ${code}: ${errors}`))));
  });
}

describe('core under SIGKILL', () => {
  it('recovers exactly the durable prefix; confirmed messages survive, durably acked ones never return', async () => {
    const random = seededRandom(announceSeed('core crash'));
    const data = tempDataDir('cairn-core-crash-');
    const confirmed = new Set<number>();
    const acked = new Set<number>();
    const pubacked = new Set<number>();
    let next = 0;
    try {
      for (let kill = 0; kill < 8; kill++) {
        const lines = await runUntilKilled(data.dir, next, 50 + Math.floor(random() * 400));
        for (const line of lines) {
          const [what, , n] = line.split(' ');
          if (what === 'confirmed') confirmed.add(Number(n));
          if (what === 'acked') acked.add(Number(n));
          if (what === 'puback') pubacked.add(Number(line.split(' ')[1]));
        }
        const log = await SegmentedLog.open({ dir: data.dir, segmentBytesMax: 256 * 1024 });
        const broker = Broker.open({ log });
        const replayed = initialState();
        for (const r of log.read()) apply(replayed, r);
        if (!log.loadSnapshot()) expect(encodeState(broker.state)).toEqual(encodeState(replayed));
        const queued = new Set([...broker.state.queues.get('work')!.pending.entries()].map((e) => Number(Buffer.from(broker.messageOf(e).payload).toString())));
        // Odd messages are never acked, so every confirmed odd one must be there; an even one may have been acked just before the kill.
        for (const i of confirmed) if (i % 2 === 1) expect(queued.has(i), `confirmed message ${i} lost`).toBe(true);
        for (const i of acked) expect(queued.has(i), `acked message ${i} came back`).toBe(false);
        const pending = new Set([...broker.state.sessions.get('sub')!.pending.entries()].map((e) => Number(Buffer.from(broker.messageOf(e).payload).toString())));
        // The session queue is bounded at 4096 and drops the oldest: every PUBACKed message newer than the 4096 newest durable ones must be there.
        const newestDurable = Math.max(-1, ...pending);
        expect(newestDurable).toBeGreaterThanOrEqual(Math.max(-1, ...pubacked));
        for (const i of pubacked) if (i > newestDurable - 4096) expect(pending.has(i), `PUBACKed message ${i} lost`).toBe(true);
        next = Math.max(next, ...queued, ...pending, ...confirmed, ...pubacked, ...acked) + 1;
        await log.close();
      }
      expect(confirmed.size).toBeGreaterThan(0);
      expect(acked.size).toBeGreaterThan(0);
    } finally {
      data.remove();
    }
  });
});
