/**
 * EntryQueue against a model (a sorted Map): any sequence of inserts (in log order and out of it), removals,
 * shifts, delivery marks and relinks (moved messages); oldestInLog, which stops early while the LSNs ascend,
 * is checked against a scan of the model after every step.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EntryQueue } from '../../src/projections/entry-queue.js';
import { announceSeed, testSeed } from '../support/kit.js';

type Model = Map<number, { lsn: number; size: number; flags: number; deliveries: number; held: string | undefined }>;

const operations = (inLogOrder: boolean) => fc.oneof(
  fc.record({ op: fc.constant('insert' as const), seq: fc.integer({ min: 1, max: 300 }), size: fc.integer({ min: 0, max: 5000 }), flags: fc.integer({ min: 0, max: 7 }), held: inLogOrder ? fc.constant(false) : fc.boolean() }),
  fc.record({ op: fc.constant('append' as const), size: fc.integer({ min: 0, max: 5000 }) }),
  fc.record({ op: fc.constant('delete' as const), seq: fc.integer({ min: 1, max: 300 }) }),
  fc.record({ op: fc.constant('shift' as const) }),
  fc.record({ op: fc.constant('deliver' as const), seq: fc.integer({ min: 1, max: 300 }) }),
  // A message moved forward by segment release: its LSN becomes the newest; or any larger one.
  // The first entry is the one segment release moves most (the oldest).
  fc.record({ op: fc.constant('relink' as const), seq: fc.option(fc.integer({ min: 1, max: 1300 }), { nil: undefined }), newest: fc.boolean(), by: fc.integer({ min: 1, max: 50_000 }) }),
  // Queued out of log order (never in the broker today; the queue must not rely on it).
  ...(inLogOrder ? [] : [fc.record({ op: fc.constant('insertAnyLsn' as const), seq: fc.integer({ min: 1, max: 300 }), lsn: fc.integer({ min: 1, max: 50_000 }) })]),
);

function sorted(model: Model): Array<[number, Model extends Map<number, infer V> ? V : never]> {
  return [...model].sort((a, b) => a[0] - b[0]);
}

describe('EntryQueue', () => {
  // In log order (as the broker queues messages: oldestInLog may stop early) and in any order (it must not).
  it.each([true, false])('behaves like a sorted map of entries (queued in log order: %s)', (inLogOrder) => {
    announceSeed('entry-queue');
    fc.assert(
      fc.property(fc.array(operations(inLogOrder), { maxLength: 400 }), (operations) => {
        const queue = new EntryQueue<string>();
        const model: Model = new Map();
        let nextAppend = 1000;
        let newestLsn = 0;
        for (const o of operations) {
          if (o.op === 'insert') {
            if (model.has(o.seq)) continue;
            const held = o.held ? `m${o.seq}` : undefined;
            queue.insert(o.seq, o.seq * 10, o.size, o.flags, held);
            model.set(o.seq, { lsn: o.seq * 10, size: o.size, flags: o.flags, deliveries: 0, held });
          } else if (o.op === 'append') {
            const seq = nextAppend++;
            queue.insert(seq, seq * 10, o.size, 0);
            model.set(seq, { lsn: seq * 10, size: o.size, flags: 0, deliveries: 0, held: undefined });
          } else if (o.op === 'delete') {
            expect(queue.delete(o.seq)).toBe(model.delete(o.seq));
          } else if (o.op === 'relink') {
            const seq = o.seq ?? sorted(model)[0]?.[0] ?? 1;
            const entry = model.get(seq);
            const to = o.newest ? Math.max(newestLsn, 20_000) + 1 : (entry?.lsn ?? 0) + o.by;
            const relinkable = entry !== undefined && entry.held === undefined;
            expect(queue.relink(seq, entry?.lsn ?? 0, to)).toBe(relinkable);
            if (relinkable) entry.lsn = to;
          } else if (o.op === 'insertAnyLsn') {
            if (model.has(o.seq)) continue;
            queue.insert(o.seq, o.lsn, 1, 0);
            model.set(o.seq, { lsn: o.lsn, size: 1, flags: 0, deliveries: 0, held: undefined });
          } else if (o.op === 'shift') {
            const first = sorted(model)[0];
            const shifted = queue.shift();
            expect(shifted?.seq).toBe(first?.[0]);
            if (first) {
              expect(shifted?.held).toBe(first[1].held);
              model.delete(first[0]);
            }
          } else {
            const entry = model.get(o.seq);
            expect(queue.markDelivered(o.seq)).toBe(entry !== undefined);
            if (entry) entry.deliveries++;
          }
          expect(queue.size).toBe(model.size);
          expect(queue.bytes).toBe([...model.values()].reduce((sum, e) => sum + e.size, 0));
          newestLsn = Math.max(newestLsn, ...[...model.values()].map((e) => e.lsn));
          const inLog = [...model.values()].filter((e) => e.held === undefined).map((e) => e.lsn);
          expect(queue.oldestInLog()?.lsn).toBe(inLog.length === 0 ? undefined : Math.min(...inLog));
        }
        const expected = sorted(model).map(([seq, e]) => ({ seq, ...e }));
        expect([...queue.entries()]).toEqual(expected);
        expect([...queue.keys()]).toEqual(expected.map((e) => e.seq));
        expect(queue.first()?.seq).toBe(expected[0]?.seq);
        const columns = queue.columns();
        expect([...columns.seqs]).toEqual(expected.map((e) => e.seq));
        expect([...columns.deliveries]).toEqual(expected.map((e) => e.deliveries));
        // Rebuilt from its columns (a snapshot, a runtime copy), it holds the same entries and bytes.
        const rebuilt = EntryQueue.fromColumns(queue.columns(), queue.heldEntries());
        expect([...rebuilt.entries()]).toEqual(expected);
        expect(rebuilt.oldestInLog()?.lsn).toBe(queue.oldestInLog()?.lsn);
        expect(rebuilt.bytes).toBe(queue.bytes);
        // A cursor walks every live seq in order, and what lies above any seq is tallied right.
        const walked: number[] = [];
        for (let e = queue.entryAfter(0); e !== undefined; e = queue.entryAfter(e.seq)) walked.push(e.seq);
        expect(walked).toEqual(expected.map((e) => e.seq));
        const middle = expected[expected.length >> 1]?.seq ?? 0;
        const above = expected.filter((e) => e.seq > middle);
        expect(queue.tallyAfter(middle, { count: -1, bytes: -1 })).toEqual({ count: above.length, bytes: above.reduce((sum, e) => sum + e.size, 0) });
      }),
      { seed: testSeed, numRuns: 300 },
    );
  });
});
