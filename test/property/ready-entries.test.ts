/**
 * The AMQP ready list as a view over the queue's projection (ready-entries.ts) against a model (a
 * sorted map): publishes whose msg record is applied now or later (deferred appends), transient
 * messages, takes, requeues, acks, purges and restarts. The view must always show the model's
 * entries, in seq order, with the model's counts, bytes and redelivered flags.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EntryFlag } from '../../src/projections/entry-queue.js';
import { enqueue, markDelivered, removeFinished } from '../../src/projections/destinations.js';
import { newQueue, type QueueState, type StoredMessage } from '../../src/projections/state.js';
import type { AmqpMessage } from '../../src/core/api.js';
import { ReadyEntries } from '../../src/core/ready-entries.js';
import { announceSeed, testSeed } from '../support/kit.js';

interface ModelEntry { readonly seq: number; readonly size: number; readonly durable: boolean; redelivered: boolean }

const operation = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('publish' as const), durable: fc.boolean(), size: fc.integer({ min: 0, max: 2000 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('apply' as const) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('take' as const) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('requeue' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('ack' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('purge' as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('restart' as const) }) },
);

const bodyOf = (seq: number): AmqpMessage => ({ exchange: '', routingKey: 'q', body: new Uint8Array([seq & 0xff]), properties: new Uint8Array(0) });
const heldMessage = (message: StoredMessage): AmqpMessage => ({ exchange: '', routingKey: message.topic, body: message.payload, properties: new Uint8Array(0) });

describe('the ready list of a durable queue, a view over its projection', () => {
  it('shows exactly the ready entries of the model, in seq order, whatever the timing of record application', () => {
    announceSeed('ready entries');
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 300 }), (operations) => {
        let state: QueueState = newQueue('q', false);
        let ready = new ReadyEntries(state, heldMessage);
        const model = new Map<number, ModelEntry>();
        const taken: ModelEntry[] = [];
        let unapplied: ModelEntry[] = [];
        let delivered: number[] = [];
        let nextSeq = 1;
        // Records of a tick are applied later (deferred msg records, coalesced deliver records), in the order they were made.
        const applyAll = (): void => {
          for (const entry of unapplied) enqueue(state, entry.seq, entry.seq * 10, entry.size, 1);
          unapplied = [];
          markDelivered(state, { q: 'q', s: delivered });
          delivered = [];
        };
        for (const o of operations) {
          if (o.op === 'publish') {
            const entry: ModelEntry = { seq: nextSeq++, size: o.size, durable: o.durable, redelivered: false };
            if (o.durable) {
              unapplied.push(entry);
              ready.insert(entry.seq, entry.seq * 10, entry.size, EntryFlag.durable);
            } else {
              ready.insert(entry.seq, 0, entry.size, 0, bodyOf(entry.seq));
            }
            model.set(entry.seq, entry);
          } else if (o.op === 'apply') {
            applyAll();
          } else if (o.op === 'take') {
            const view = ready.shift();
            const expected = [...model.keys()].sort((a, b) => a - b)[0];
            expect(view?.seq).toBe(expected);
            if (view === undefined) continue;
            const entry = model.get(view.seq)!;
            model.delete(view.seq);
            taken.push(entry);
            if (entry.durable) delivered.push(entry.seq);
          } else if (o.op === 'requeue' || o.op === 'ack') {
            if (taken.length === 0) continue;
            const [entry] = taken.splice(o.pick % taken.length, 1);
            if (o.op === 'requeue') {
              entry!.redelivered = true;
              const flags = (entry!.durable ? EntryFlag.durable : 0) | EntryFlag.redelivered;
              ready.insert(entry!.seq, entry!.durable ? entry!.seq * 10 : 0, entry!.size, flags, entry!.durable ? undefined : bodyOf(entry!.seq), 1);
              model.set(entry!.seq, entry!);
            } else if (entry!.durable) {
              applyAll();
              removeFinished(state, { q: 'q', s: [entry!.seq] });
            }
          } else if (o.op === 'purge') {
            const purged = ready.clear().map((view) => view.seq);
            expect(purged).toEqual([...model.keys()].sort((a, b) => a - b));
            applyAll();
            removeFinished(state, { q: 'q', s: purged.filter((seq) => model.get(seq)!.durable), why: 'purge' });
            model.clear();
          } else {
            // kill -9 and replay: transient messages are gone; every durable one not acked is ready, redelivered if it was delivered.
            applyAll();
            const survivors = [...model.values(), ...taken].filter((entry) => entry.durable);
            model.clear();
            taken.length = 0;
            for (const entry of survivors) model.set(entry.seq, { ...entry, redelivered: state.pending.get(entry.seq)!.deliveries > 0 });
            const replayed = newQueue('q', false);
            for (const entry of state.pending.entries()) enqueue(replayed, entry.seq, entry.lsn, entry.size, 1);
            for (const entry of state.pending.entries()) if (entry.deliveries > 0) markDelivered(replayed, { q: 'q', s: [entry.seq] });
            state = replayed;
            ready = new ReadyEntries(state, heldMessage);
          }
          const entries = [...model.values()];
          expect(ready.size).toBe(entries.length);
          expect(ready.bytes).toBe(entries.reduce((sum, entry) => sum + entry.size, 0));
          const head = ready.first();
          const first = entries.sort((a, b) => a.seq - b.seq)[0];
          expect(head?.seq).toBe(first?.seq);
          if (head && first) {
            expect((head.flags & EntryFlag.durable) !== 0).toBe(first.durable);
            expect((head.flags & EntryFlag.redelivered) !== 0).toBe(first.redelivered);
            expect(head.held !== undefined).toBe(!first.durable);
          }
        }
      }),
      { seed: testSeed, numRuns: 300 },
    );
  });
});
