/**
 * Large answers rendered in slices (src/http/answer-slices.ts): for random
 * queue sets, a queue list and the per-queue exposition written in slices
 * with turns of the event loop between them equal the same answers written in
 * one go (and the queue list equals JSON.stringify of its object form), even
 * when the queues' figures change between slices: a sliced answer shows the
 * moment it began. While a 1,000-queue answer is written, callbacks queued
 * when it began run between its slices, before it is complete (the fact that
 * other clients are served meanwhile); the answer of one go let none run.
 * Slices end on the clock (sliceMs); these tests give them no time (a budget
 * of 0), so that every itemsPerCheck items end one, whatever the machine's speed.
 */
import fc from 'fast-check';
import { Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { Broker } from '../../src/core/broker.js';
import { AnswerBytes } from '../../src/http/answer-bytes.js';
import { itemsPerCheck, renderInSlices } from '../../src/http/answer-slices.js';
import { QueueListWriter, queueFields, type QueueView } from '../../src/http/management/queue-fields.js';
import { Metrics, textInSlices } from '../../src/metrics.js';
import { perQueueExposition, perQueueExpositionSlices, readQueueFigures } from '../../src/metrics-per-queue.js';
import { announceSeed, testSeed } from '../support/kit.js';

type MutableQueue = { -readonly [K in keyof QueueView]: QueueView[K] };

const queueArbitrary = fc.record({
  name: fc.string({ unit: fc.constantFrom('a', 'b', '"', '\\', '\n', 'é', '\u2028', '😀'), maxLength: 8 }),
  durable: fc.boolean(),
  autoDelete: fc.boolean(),
  exclusiveOwner: fc.option(fc.string({ maxLength: 4 }), { nil: undefined }),
  queueArguments: fc.option(fc.record({ 'x-queue-type': fc.constantFrom('classic', 'quorum'), 'x-max-length': fc.nat() }, { requiredKeys: [] }), { nil: undefined }),
  readyCount: fc.nat(10_000_000),
  dropped: fc.nat(1000),
  unacked: fc.record({ size: fc.nat(1000) }),
  consumers: fc.array(fc.constant(null), { maxLength: 3 }),
  exclusiveConsumer: fc.option(fc.record({ tag: fc.string({ maxLength: 4 }) }), { nil: undefined }),
}).map((queue) => queue as unknown as MutableQueue);

/** Enough queues for several slices, each distinct by name. */
const queuesArbitrary = fc.uniqueArray(queueArbitrary, { selector: (queue) => queue.name, maxLength: 12 * itemsPerCheck + 5, size: 'max' });

function brokerWith(queues: readonly QueueView[]): Broker {
  return { queues: new Map(queues.map((queue) => [queue.name, queue])) } as unknown as Broker;
}

/** Changes every queue's figures on each turn of the event loop until stopped; stop() says how many times. */
function changeFiguresEachTurn(queues: readonly MutableQueue[]): () => number {
  let running = true;
  let changes = 0;
  const change = (): void => {
    if (!running) return;
    changes++;
    for (const queue of queues) {
      queue.readyCount++;
      queue.dropped++;
      queue.unacked = { size: queue.unacked.size + 1 };
    }
    setImmediate(change);
  };
  setImmediate(change);
  return () => {
    running = false;
    return changes;
  };
}

/** What the object form says (the oracle of test/property/queue-list-json.test.ts, all columns). */
function expectedList(queues: readonly QueueView[], node: string): string {
  return JSON.stringify(queues.map((queue) => ({
    name: queue.name, vhost: '/', durable: queue.durable, auto_delete: queue.autoDelete, exclusive: queue.exclusiveOwner !== undefined,
    arguments: { ...queue.queueArguments }, node, state: 'running', type: queue.queueArguments?.['x-queue-type'] ?? 'classic', policy: null,
    messages: queue.readyCount + queue.unacked.size, messages_ready: queue.readyCount, messages_unacknowledged: queue.unacked.size,
    consumers: queue.consumers.length, exclusive_consumer_tag: queue.exclusiveConsumer?.tag ?? null, cairn: { dropped_messages: queue.dropped },
  })));
}

/** Counts turns of the event loop, and how many bytes `out` held at the first, until stopped. */
function watchTurns(out: AnswerBytes): { stop(): { turns: number; bytesAtFirstTurn: number } } {
  let turns = 0;
  let bytesAtFirstTurn = -1;
  let running = true;
  const tick = (): void => {
    if (!running) return;
    if (turns++ === 0) bytesAtFirstTurn = out.view().length;
    setImmediate(tick);
  };
  setImmediate(tick);
  return { stop: () => { running = false; return { turns, bytesAtFirstTurn }; } };
}

function manyQueues(count: number): MutableQueue[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `q-${i}`, durable: false, autoDelete: false, exclusiveOwner: undefined, queueArguments: undefined,
    readyCount: i, dropped: 0, unacked: { size: 0 }, consumers: { length: 0 }, exclusiveConsumer: undefined,
  }) as unknown as MutableQueue);
}

describe('answers in slices', () => {
  it('a queue list in slices equals it in one go and its object form, as of the moment it began', async () => {
    const seed = announceSeed('queue list in slices', testSeed);
    const node = 'cairn@host';
    const writer = new QueueListWriter(queueFields(node));
    await fc.assert(fc.asyncProperty(queuesArbitrary, fc.subarray(queueFields(node).map((_, index) => index)), async (queues, indexes) => {
      // Written at once by a writer of its own: the same writer would give its kept list again, in one copy, not in slices.
      const atOnce = new QueueListWriter(queueFields(node)).listText(queues, indexes);
      const expected = expectedList(queues, node);
      const out = new AnswerBytes(Buffer.alloc(64));
      const stopChanging = changeFiguresEachTurn(queues);
      let changes = 0;
      try {
        await renderInSlices(writer.writeSlices(queues, indexes, out), 0);
      } finally {
        changes = stopChanging();
      }
      expect(out.view().toString('utf8')).toBe(atOnce);
      if (indexes.length === queueFields(node).length) expect(atOnce).toBe(expected);
      // More than one slice: the figures changed while it was written, and the answer did not show it.
      if (queues.length > itemsPerCheck) expect(changes).toBeGreaterThan(0);
    }), { seed, numRuns: 40 });
  });

  it('the per-queue exposition in slices equals it in one go, as of the moment it began', async () => {
    const seed = announceSeed('per-queue exposition in slices', testSeed);
    await fc.assert(fc.asyncProperty(queuesArbitrary, async (queues) => {
      const broker = brokerWith(queues);
      const atOnce = perQueueExposition(broker);
      const out = new AnswerBytes(Buffer.alloc(64));
      const stopChanging = changeFiguresEachTurn(queues);
      let changes = 0;
      try {
        await renderInSlices(perQueueExpositionSlices(readQueueFigures(broker), out), 0);
      } finally {
        changes = stopChanging();
      }
      expect(out.view().toString('utf8')).toBe(atOnce);
      if (4 * queues.length > itemsPerCheck) expect(changes).toBeGreaterThan(0);
    }), { seed, numRuns: 40 });
  });

  it('prom-client text read one metric per turn equals registry.metrics()', async () => {
    const registry = new Registry();
    new Gauge({ name: 'a_gauge', help: 'first', registers: [registry] }).set(3);
    new Gauge({ name: 'b_gauge', help: 'second "quoted"\nline', labelNames: ['x'] as const, registers: [registry] }).set({ x: 'v"\\' }, 1.5);
    new Gauge({ name: 'c_gauge', help: 'third', registers: [registry] });
    expect(await textInSlices(registry)).toBe(await registry.metrics());
    expect(await textInSlices(registry, 0)).toBe(await registry.metrics());
  });

  it('while 1,000 queues are written, callbacks queued when it began run between the slices, before the answer is complete', async () => {
    const queues = manyQueues(1000);
    const out = new AnswerBytes(Buffer.alloc(64));
    const watch = watchTurns(out);
    await renderInSlices(new QueueListWriter(queueFields('n')).writeSlices(queues, [0, 10], out), 0);
    const { turns, bytesAtFirstTurn } = watch.stop();
    expect(bytesAtFirstTurn).toBeGreaterThan(0);
    expect(bytesAtFirstTurn).toBeLessThan(out.view().length);
    expect(turns).toBeGreaterThanOrEqual(Math.floor(1000 / itemsPerCheck));
  });

  it('the same for /metrics/per-object over 1,000 queues (Metrics.writePerObject)', async () => {
    const queues = manyQueues(1000);
    const broker = {
      queues: new Map(queues.map((queue) => [queue.name, { ...queue, consumers: [] }])), sessions: new Map(), exchanges: new Map(),
      state: { sessions: new Map(), queues: new Map(), groups: new Map(), collections: new Map() }, log: { nextLsn: 1 },
    } as unknown as Broker;
    const metrics = new Metrics();
    metrics.collectFrom(broker);
    const out = new AnswerBytes(Buffer.alloc(64));
    await metrics.writePerObject(out);
    const once = out.view().toString('utf8');
    expect(once).toContain('rabbitmq_queue_messages_ready{vhost="/",queue="q-999"} 999\n');
    out.takeBuffer();
    // Every figure changes, so no family is the last answer's text (metrics-per-queue.ts KeptFamilies): all are written.
    for (const queue of broker.queues.values()) Object.assign(queue, { readyCount: queue.readyCount + 1, consumers: [{}] });
    const watch = watchTurns(out);
    await metrics.writePerObject(out, 0);
    const { turns, bytesAtFirstTurn } = watch.stop();
    expect(bytesAtFirstTurn).toBeLessThan(out.view().length);
    expect(turns).toBeGreaterThanOrEqual(Math.floor(4 * 1000 / itemsPerCheck));
  });
});
