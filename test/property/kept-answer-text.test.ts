/**
 * The text a scrape keeps for the next one (a queue's object text per set of
 * columns, queue-fields.ts; a per-queue family of /metrics/per-object,
 * metrics-per-queue.ts): over a sequence of answers between which random
 * queues change any of their changing values, are added or removed, every
 * answer written with the kept text equals the same answer written fresh by a
 * writer that kept nothing; an unchanged queue list is one copy of the last.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import type { Broker } from '../../src/core/broker.js';
import { AnswerBytes } from '../../src/http/answer-bytes.js';
import { renderAtOnce } from '../../src/http/answer-slices.js';
import { QueueListWriter, queueFields, type QueueView } from '../../src/http/management/queue-fields.js';
import { KeptFamilies, perQueueExposition, perQueueExpositionSlices, readQueueFigures } from '../../src/metrics-per-queue.js';
import { announceSeed, testSeed } from '../support/kit.js';

type MutableQueue = { -readonly [K in keyof QueueView]: QueueView[K] };

function newQueue(name: string): MutableQueue {
  return {
    name, durable: false, autoDelete: false, exclusiveOwner: undefined, queueArguments: undefined,
    readyCount: 0, dropped: 0, unacked: { size: 0 }, consumers: [], exclusiveConsumer: undefined,
  } as unknown as MutableQueue;
}

/** One change between two answers: which queue (an index, wrapped) and what happens to it. */
const changeArbitrary = fc.tuple(fc.nat(), fc.oneof(
  fc.record({ ready: fc.oneof(fc.nat(5), fc.constant(Number.NaN), fc.constant(-0)) }),
  fc.record({ unacknowledged: fc.nat(5) }),
  fc.record({ consumers: fc.nat(3) }),
  fc.record({ dropped: fc.nat(5) }),
  fc.record({ tag: fc.option(fc.constantFrom('a', 'b', '"'), { nil: undefined }) }),
  fc.constant('add' as const),
  fc.constant('remove' as const),
));

type Change = [number, { ready?: number; unacknowledged?: number; consumers?: number; dropped?: number; tag?: string | undefined } | 'add' | 'remove'];

let added = 0;

function apply(queues: MutableQueue[], [at, change]: Change): void {
  if (change === 'add') {
    queues.splice(at % (queues.length + 1), 0, newQueue(`added-${added++}`));
    return;
  }
  if (queues.length === 0) return;
  const index = at % queues.length;
  if (change === 'remove') {
    queues.splice(index, 1);
    return;
  }
  const queue = queues[index]!;
  if (change.ready !== undefined) queue.readyCount = change.ready;
  if (change.unacknowledged !== undefined) queue.unacked = { size: change.unacknowledged };
  if (change.consumers !== undefined) queue.consumers = Array.from({ length: change.consumers }) as unknown as QueueView['consumers'];
  if (change.dropped !== undefined) queue.dropped = change.dropped;
  if ('tag' in change) queue.exclusiveConsumer = change.tag === undefined ? undefined : { tag: change.tag };
}

const stepsArbitrary = fc.array(fc.array(changeArbitrary, { maxLength: 4 }), { minLength: 1, maxLength: 6 });

describe('text kept from one answer for the next', () => {
  it('a queue list written with kept object texts equals it written fresh, for every set of columns, after any changes', () => {
    const seed = announceSeed('kept queue object texts', testSeed);
    const fields = queueFields('cairn@host');
    const columnSets = [fields.map((_, index) => index), [0, 10, 11, 12, 13], [14, 0], [15, 3, 13]];
    fc.assert(fc.property(fc.nat(6), stepsArbitrary, fc.array(fc.nat(columnSets.length - 1), { minLength: 6, maxLength: 6 }), (initial, steps, columnChoices) => {
      const queues = Array.from({ length: initial }, (_, i) => newQueue(`q-${i}`));
      const keeping = new QueueListWriter(fields);
      steps.forEach((changes, step) => {
        for (const change of changes) apply(queues, change as Change);
        const indexes = columnSets[columnChoices[step]!]!;
        // Twice with the keeping writer (the second answer is all kept text), against a writer that kept nothing.
        const fresh = new QueueListWriter(fields).listText(queues, indexes);
        expect(keeping.listText(queues, indexes)).toBe(fresh);
        expect(keeping.listText(queues, indexes)).toBe(fresh);
      });
    }), { seed, numRuns: 300 });
  });

  it('a list none of whose queues changed is the last list\'s text, written as one copy; one changed queue writes it queue by queue', () => {
    const fields = queueFields('cairn@host');
    const queues = Array.from({ length: 100 }, (_, i) => newQueue(`q-${i}`));
    const writer = new QueueListWriter(fields);
    const indexes = writer.columnIndexes(undefined);
    const copiesWriting = (): { text: string; copies: number } => {
      const out = new AnswerBytes(Buffer.alloc(16));
      const copies = vi.spyOn(out, 'bytes');
      writer.write(queues, indexes, out);
      return { text: out.view().toString('utf8'), copies: copies.mock.calls.length };
    };
    const first = copiesWriting();
    expect(copiesWriting()).toEqual({ text: first.text, copies: 1 });
    queues[50]!.readyCount = 3;
    const changed = copiesWriting();
    expect(changed.copies).toBe(queues.length - 1);
    expect(changed.text).toBe(new QueueListWriter(fields).listText(queues, indexes));
    expect(copiesWriting()).toEqual({ text: changed.text, copies: 1 });
  });

  it('the per-queue exposition written with kept families equals it written fresh, after any changes', () => {
    const seed = announceSeed('kept per-queue families', testSeed);
    fc.assert(fc.property(fc.nat(6), stepsArbitrary, (initial, steps) => {
      const queues = Array.from({ length: initial }, (_, i) => newQueue(`q-${i}`));
      const broker = (): Broker => ({ queues: new Map(queues.map((queue) => [queue.name, queue])) }) as unknown as Broker;
      const kept = new KeptFamilies();
      const withKept = (): string => {
        const out = new AnswerBytes(Buffer.alloc(64));
        renderAtOnce(perQueueExpositionSlices(readQueueFigures(broker()), out, kept));
        return out.view().toString('utf8');
      };
      for (const changes of steps) {
        for (const change of changes) apply(queues, change as Change);
        const fresh = perQueueExposition(broker());
        expect(withKept()).toBe(fresh);
        expect(withKept()).toBe(fresh);
      }
    }), { seed, numRuns: 300 });
  });
});
