/**
 * The one runtime type of a destination (core/destination-runtime.ts) against a model: ready
 * entries in seq order, entries taken and unacknowledged by delivery, settle and requeue (each
 * requeue counts the delivery and flags the entry redelivered), the drop-oldest bound. Run in
 * both modes: a view over a projection (a durable queue or an MQTT session: messages arrive as
 * applied msg records, as pushes whose record is applied later, or as pushes after their record)
 * and a list of its own (a shared group). And the consumer ring: each pick accepts, has the highest
 * priority among those that accept, and equal ones take turns.
 *
 * A transient destination is the same code with a committer that writes nothing: a clean MQTT
 * session and a persistent one, driven alike through the real core, keep the same state and send
 * the same packets, and no record names the clean one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EntryFlag } from '../../src/projections/entry-queue.js';
import { enqueue, removeFinished } from '../../src/projections/destinations.js';
import { newQueue, type StoredMessage } from '../../src/projections/state.js';
import { ConsumerRing, DestinationRuntime } from '../../src/core/destination-runtime.js';
import { Broker } from '../../src/core/broker.js';
import { MemoryLog } from '../../src/core/record-log.js';
import type { SessionState } from '../../src/projections/state.js';
import { RecordingLink } from '../support/inspect-workload.js';
import { announceSeed, testSeed } from '../support/kit.js';

interface ModelEntry { readonly seq: number; readonly size: number; deliveries: number }

const operation = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('arrive' as const), how: fc.constantFrom('applied', 'pushed', 'pushed-after-apply'), size: fc.integer({ min: 0, max: 2000 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('apply' as const) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('take' as const) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('settle' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('requeue' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('requeue-all' as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('bound' as const), messagesMax: fc.integer({ min: 0, max: 12 }), bytesMax: fc.integer({ min: 0, max: 12_000 }), size: fc.integer({ min: 0, max: 2000 }) }) },
);

/** A delivery key that is not the seq (as an MQTT packet id is not), to prove entries are found by delivery. */
const deliveryOf = (seq: number): number => seq * 3 + 7;

type Operation = typeof operation extends fc.Arbitrary<infer T> ? T : never;

function checkAgainstModel(mode: 'view' | 'own', operations: readonly Operation[]): void {
  const state = newQueue('q', false);
  const runtime = new DestinationRuntime<StoredMessage>(mode === 'view' ? state : undefined, (message) => message);
  const ready = new Map<number, ModelEntry>();
  const unacked = new Map<number, ModelEntry>();
  let unapplied: ModelEntry[] = [];
  let nextSeq = 1;
  // Records of a tick are applied later, in the order they were made (deferred msg records).
  const applyAll = (): void => {
    for (const entry of unapplied) enqueue(state, entry.seq, entry.seq * 10, entry.size, 1);
    unapplied = [];
  };
  for (const o of operations) {
    if (o.op === 'arrive') {
      const entry: ModelEntry = { seq: nextSeq++, size: o.size, deliveries: 0 };
      ready.set(entry.seq, entry);
      if (mode === 'own') {
        runtime.ready.insert(entry.seq, entry.seq * 10, entry.size, EntryFlag.durable);
      } else if (o.how === 'pushed') {
        runtime.ready.insert(entry.seq, entry.seq * 10, entry.size, EntryFlag.durable);
        unapplied.push(entry);
      } else {
        // An applied msg record (a persistent session's only way in), maybe pushed after it (an AMQP publish that committed at once).
        applyAll();
        enqueue(state, entry.seq, entry.seq * 10, entry.size, 1);
        if (o.how === 'pushed-after-apply') runtime.ready.insert(entry.seq, entry.seq * 10, entry.size, EntryFlag.durable);
      }
    } else if (o.op === 'apply') {
      applyAll();
    } else if (o.op === 'take') {
      // As a delivery does: look at the head (reading its message), then take that one.
      const view = runtime.ready.first();
      if (view !== undefined) runtime.ready.take(view);
      expect(view?.seq, 'the head is the smallest ready seq').toBe(ready.size === 0 ? undefined : Math.min(...ready.keys()));
      if (view === undefined) continue;
      expect(view.deliveries, `seq ${view.seq}: deliveries`).toBe(ready.get(view.seq)!.deliveries);
      runtime.track(view, deliveryOf(view.seq));
      unacked.set(deliveryOf(view.seq), ready.get(view.seq)!);
      ready.delete(view.seq);
    } else if (o.op === 'settle' || o.op === 'requeue') {
      const keys = [...unacked.keys()];
      const key = keys.length === 0 ? deliveryOf(nextSeq + 1) : keys[o.pick % keys.length]!;
      const settled = runtime.settle(key);
      expect(settled?.seq, `delivery ${key}`).toBe(unacked.get(key)?.seq);
      if (settled === undefined) continue;
      const entry = unacked.get(key)!;
      unacked.delete(key);
      if (o.op === 'requeue') {
        runtime.requeue(settled);
        entry.deliveries++;
        ready.set(entry.seq, entry);
      } else if (mode === 'view') {
        // Its ack record, applied after its msg record.
        applyAll();
        removeFinished(state, { q: 'q', s: [entry.seq] });
      }
    } else if (o.op === 'requeue-all') {
      runtime.requeueAll();
      for (const entry of unacked.values()) {
        entry.deliveries++;
        ready.set(entry.seq, entry);
      }
      unacked.clear();
    } else {
      const dropped = runtime.dropOldest(o.messagesMax, o.bytesMax, o.size).map((view) => view.seq);
      const expected: number[] = [];
      let count = ready.size;
      let bytes = [...ready.values()].reduce((sum, entry) => sum + entry.size, 0);
      for (const seq of [...ready.keys()].sort((a, b) => a - b)) {
        if (count < o.messagesMax && bytes + o.size <= o.bytesMax) break;
        expected.push(seq);
        count--;
        bytes -= ready.get(seq)!.size;
      }
      expect(dropped, 'the bound drops the oldest ready entries, and only as many as it must').toEqual(expected);
      for (const seq of dropped) ready.delete(seq);
      if (mode === 'view') {
        applyAll();
        removeFinished(state, { q: 'q', s: dropped, why: 'bound' });
      }
    }
    expect(runtime.readyCount).toBe(ready.size);
    expect(runtime.readyBytes).toBe([...ready.values()].reduce((sum, entry) => sum + entry.size, 0));
    expect(runtime.unacked.size).toBe(unacked.size);
    for (const [key, entry] of runtime.unacked) {
      expect(entry.seq).toBe(unacked.get(key)?.seq);
      expect(ready.has(entry.seq), `seq ${entry.seq} is ready and unacknowledged`).toBe(false);
    }
    const head = runtime.ready.first();
    const first = [...ready.values()].sort((a, b) => a.seq - b.seq)[0];
    expect(head?.seq).toBe(first?.seq);
    if (head !== undefined && first !== undefined) {
      expect(head.deliveries, `seq ${head.seq}: deliveries`).toBe(first.deliveries);
      expect((head.flags & EntryFlag.redelivered) !== 0, `seq ${head.seq}: redelivered`).toBe(first.deliveries > 0);
    }
  }
}

describe('the destination runtime', () => {
  for (const mode of ['view', 'own'] as const) {
    it(`keeps ready order, unacknowledged entries by delivery, delivery counts and the drop-oldest bound (ready list: ${mode === 'view' ? 'a view over the projection' : 'a list of its own'})`, () => {
      announceSeed(`destination runtime, ${mode}`);
      fc.assert(fc.property(fc.array(operation, { maxLength: 200 }), (operations) => checkAgainstModel(mode, operations)), { seed: testSeed, numRuns: 300 });
    });
  }

  it('a clean session (its committer writes nothing) keeps the state a persistent one keeps, sends the same packets, and is in no record', async () => {
    announceSeed('clean session against persistent');
    const step = fc.oneof(
      { weight: 5, arbitrary: fc.record({ op: fc.constant('publish' as const), qos: fc.constantFrom<0 | 1 | 2>(0, 1, 2), size: fc.integer({ min: 0, max: 40 }), retain: fc.boolean() }) },
      { weight: 4, arbitrary: fc.record({ op: fc.constantFrom('puback' as const, 'pubrec' as const, 'pubcomp' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ op: fc.constant('subscribe' as const), qos: fc.constantFrom<0 | 1 | 2>(0, 1, 2) }) },
      { weight: 1, arbitrary: fc.record({ op: fc.constant('unsubscribe' as const) }) },
      // Each session publishes QoS 2 itself (its rx2 set), then releases the id.
      { weight: 1, arbitrary: fc.record({ op: fc.constant('publishOwn' as const), id: fc.integer({ min: 1, max: 3 }) }) },
      { weight: 1, arbitrary: fc.record({ op: fc.constant('pubrel' as const), id: fc.integer({ min: 1, max: 3 }) }) },
    );
    const sessionView = (state: SessionState): unknown => ({
      nextSeq: state.nextSeq, dropped: state.dropped, subscriptions: [...state.subscriptions], rx2: [...state.rx2], rel: [...state.rel],
      pending: [...state.pending.entries()].map((entry) => [entry.seq, entry.size, entry.deliveries, entry.flags]),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 60 }), async (steps) => {
        const log = new MemoryLog();
        const broker = Broker.open({ log, limits: { sessionQueueMessagesMax: 4, sessionQueueBytesMax: 100, sessionInflightMessagesMax: 2, snapshotEveryRecords: 0 } });
        const publisher = broker.mqtt.connect('pub', true, new RecordingLink()).session;
        const sides = ['persistent', 'clean'].map((clientId) => {
          const link = new RecordingLink();
          const { session } = broker.mqtt.connect(clientId, clientId === 'clean', link);
          session.start();
          return { clientId, link, session };
        });
        for (const side of sides) side.session.subscribe([{ filter: 't', qos: 2 }]);
        await broker.flush();
        let payloadByte = 0;
        for (const s of steps) {
          if (s.op === 'publish') {
            const payload = new Uint8Array(s.size).fill(payloadByte++ % 256);
            publisher.publish({ topic: 't', payload, qos: s.qos, retain: s.retain, ...(s.qos > 0 ? { packetId: 1 + (payloadByte % 60_000) } : {}) });
          }
          for (const { session, link } of sides) {
            if (s.op === 'subscribe') session.sendRetained(session.subscribe([{ filter: 't', qos: s.qos }]).retainedFilters);
            else if (s.op === 'unsubscribe') session.unsubscribe(['t']);
            else if (s.op === 'publishOwn') session.publish({ topic: 'nobody', payload: new Uint8Array(1), qos: 2, retain: false, packetId: s.id });
            else if (s.op === 'pubrel') session.pubrel(s.id);
            else if (s.op === 'pubcomp') {
              if (link.pubrels.length > 0) session.pubcomp(link.pubrels[s.pick % link.pubrels.length]!);
            } else if (s.op !== 'publish') {
              const ids = link.received.flatMap((packet) => (packet.packetId === undefined ? [] : [packet.packetId]));
              if (ids.length > 0) session[s.op](ids[s.pick % ids.length]!);
            }
          }
          await broker.flush();
          const [persistent, clean] = sides.map((side) => broker.sessions.get(side.clientId)!);
          expect(clean!.persistent).toBe(false);
          expect(sessionView(clean!.state), 'the clean session\'s state').toEqual(sessionView(persistent!.state));
          expect(clean!.unacked.size).toBe(persistent!.unacked.size);
          expect(clean!.readyCount).toBe(persistent!.readyCount);
          expect(sides[1]!.link.received, 'what the clean session was sent').toEqual(sides[0]!.link.received);
          expect(sides[1]!.link.pubrels).toEqual(sides[0]!.link.pubrels);
        }
        // The log holds the persistent session's records and none of the clean one's.
        expect(log.records.some((r) => JSON.stringify(r.body).includes('"persistent"'))).toBe(true);
        expect(log.records.filter((r) => JSON.stringify(r.body).includes('"clean"'))).toEqual([]);
      }),
      { seed: testSeed, numRuns: 150 },
    );
  });

  it('consumer ring: a pick accepts, has the highest priority among those that accept, and equal ones take turns', () => {
    announceSeed('consumer ring');
    const step = fc.oneof(
      fc.record({ op: fc.constant('add' as const), priority: fc.integer({ min: 0, max: 2 }) }),
      fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }),
      fc.record({ op: fc.constant('next' as const), accepting: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const ring = new ConsumerRing<{ id: number; priority: number }>((consumer) => consumer.priority);
        let id = 0;
        for (const s of steps) {
          if (s.op === 'add') ring.add({ id: id++, priority: s.priority });
          else if (s.op === 'remove') {
            if (ring.list.length > 0) expect(ring.remove(ring.list[s.pick % ring.list.length]!)).toBe(true);
          } else {
            const accepts = (consumer: { id: number }): boolean => s.accepting[consumer.id % 8]!;
            const willing = ring.list.filter(accepts);
            const top = Math.max(...willing.map((consumer) => consumer.priority));
            const best = willing.filter((consumer) => consumer.priority === top);
            // As many picks as there are best ones: each of them exactly once.
            const picked = best.map(() => ring.next(accepts));
            expect(picked.every((consumer) => consumer !== undefined && accepts(consumer) && consumer.priority === top)).toBe(true);
            expect(new Set(picked).size).toBe(best.length);
            if (willing.length === 0) expect(ring.next(accepts)).toBeUndefined();
          }
        }
      }),
      { seed: testSeed, numRuns: 300 },
    );
  });
});
