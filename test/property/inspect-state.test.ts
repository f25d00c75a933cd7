/**
 * For random workloads on a real SegmentedLog (with snapshots taken at random
 * points), `inspect state --at X --json` equals the live state the broker had
 * when the log reached X; and `recover --lsn X` starts up into that state.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runInspect } from '../../src/inspect/index.js';
import { toJsonValue } from '../../src/inspect/format.js';
import { WorkloadDriver } from '../support/inspect-workload.js';
import { encodeState } from '../../src/projections/snapshot-codec.js';
import { announceSeed } from '../support/kit.js';

const clients = ['c0', 'c1'];
const topics = ['a/b', 'a/c', 'sensors/x'];
const command = fc.oneof(
  fc.record({ t: fc.constant('subscribe' as const), c: fc.constantFrom(...clients), f: fc.constantFrom('a/#', 'a/b', '#'), qos: fc.constantFrom<0 | 1 | 2>(0, 1, 2) }),
  fc.record({ t: fc.constant('publish' as const), c: fc.constantFrom(...clients), topic: fc.constantFrom(...topics), p: fc.string({ maxLength: 8 }), qos: fc.constantFrom<0 | 1 | 2>(0, 1, 2), retain: fc.boolean() }),
  fc.record({ t: fc.constant('puback' as const), c: fc.constantFrom(...clients) }),
  fc.record({ t: fc.constant('clean' as const), c: fc.constantFrom(...clients) }),
  fc.record({ t: fc.constant('declare' as const), q: fc.constantFrom('q0', 'q1') }),
  fc.record({ t: fc.constant('bind' as const), q: fc.constantFrom('q0', 'q1'), k: fc.constantFrom('a.#', 'q0', '#') }),
  fc.record({ t: fc.constant('amqp' as const), k: fc.constantFrom('q0', 'q1', 'a.b'), p: fc.string({ maxLength: 8 }) }),
  fc.record({ t: fc.constant('get' as const), q: fc.constantFrom('q0', 'q1'), outcome: fc.constantFrom<'ack' | 'reject' | 'requeue'>('ack', 'reject', 'requeue') }),
  fc.record({ t: fc.constant('purge' as const), q: fc.constantFrom('q0', 'q1') }),
  fc.record({ t: fc.constant('snapshot' as const) }),
);
type Command = typeof command extends fc.Arbitrary<infer C> ? C : never;

async function run(w: WorkloadDriver, c: Command): Promise<void> {
  try {
    switch (c.t) {
      case 'subscribe': await ensure(w, c.c); await w.subscribe(c.c, c.f, c.qos); break;
      case 'publish': await ensure(w, c.c); await w.publish(c.c, c.topic, c.p, c.qos, c.retain); break;
      case 'puback': if (w.sessions.has(c.c)) await w.pubackAll(c.c); break;
      case 'clean': w.detach(c.c); await w.connect(c.c, true); w.detach(c.c); break;
      case 'declare': await w.declareQueue(c.q); break;
      case 'bind': await w.bind(c.q, 'amq.topic', c.k); break;
      case 'amqp': await w.amqpPublish(c.k === 'a.b' ? 'amq.topic' : '', c.k, c.p); break;
      case 'get': await w.getAndSettle(c.q, c.outcome); break;
      case 'purge': await w.purgeQueue(c.q); break;
      // A snapshot of the empty log is refused by the log (it must cover an appended LSN).
      case 'snapshot': if (w.broker.state.lastLsn > 0) await w.snapshot(); break;
    }
  } catch (error) {
    if ((error as { name?: string }).name !== 'BrokerError') throw error;
  }
  await w.broker.flush();
}

async function ensure(w: WorkloadDriver, client: string): Promise<void> {
  if (!w.sessions.has(client)) await w.connect(client, false);
}

async function stateAt(dir: string, lsn: number): Promise<unknown> {
  const stdout = new PassThrough();
  const chunks: Buffer[] = [];
  stdout.on('data', (c: Buffer) => chunks.push(c));
  const code = await runInspect(['state', '--data', dir, '--at', String(lsn), '--json'], { stdout, stderr: new PassThrough(), isTTY: false });
  expect(code).toBe(0);
  return (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { state: unknown }).state;
}

describe('inspect state --at X equals the live state at X', () => {
  it('for random workloads with snapshots', async () => {
    const seed = announceSeed('inspect-state property');
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 3, maxLength: 40 }), fc.array(fc.nat(), { minLength: 3, maxLength: 3 }), async (commands, picks) => {
        const dir = fs.mkdtempSync(join(os.tmpdir(), 'cairn-inspect-prop-'));
        try {
          const w = await WorkloadDriver.open(dir);
          const live = new Map<number, unknown>([[0, toJsonValue(encodeState(w.broker.state))]]);
          for (const c of commands) {
            await run(w, c);
            live.set(w.broker.state.lastLsn, toJsonValue(encodeState(w.broker.state)));
          }
          await w.close();
          const points = [...live.keys()];
          for (const pick of picks) {
            const lsn = points[pick % points.length]!;
            expect(await stateAt(dir, lsn)).toEqual(live.get(lsn));
          }
        } finally {
          fs.rmSync(dir, { recursive: true, force: true });
        }
      }),
      { numRuns: 50, seed },
    );
  }, 120_000);
});
