/**
 * The hand-written per-queue exposition (src/metrics-per-queue.ts): any queue
 * name reads back from the text exactly (label escaping as the text format
 * defines it), every queue gets one series per family with its figures, and
 * the series stop at queueSeriesMax. promtool's check of the whole page is in
 * test/integration/metrics-exposition.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Broker } from '../../src/core/broker.js';
import { escapeLabelValue, perQueueExposition, queueFamilies, queueSeriesMax } from '../../src/metrics-per-queue.js';
import { announceSeed, testSeed } from '../support/kit.js';

interface FakeQueue { name: string; readyCount: number; unacked: { size: number }; consumers: unknown[] }

function brokerWith(queues: readonly FakeQueue[]): Broker {
  return { queues: new Map(queues.map((queue) => [queue.name, queue])) } as unknown as Broker;
}

/** Reads `name{vhost="/",queue="…"} value` lines back, undoing the label escapes. */
function parseSeries(text: string): Map<string, Map<string, number>> {
  const families = new Map<string, Map<string, number>>();
  for (const line of text.split('\n')) {
    const match = /^(\w+)\{vhost="\/",queue="((?:[^"\\]|\\.)*)"\} (\d+)$/.exec(line);
    if (match === null) continue;
    const queue = match[2]!.replace(/\\(.)/g, (_, escaped: string) => (escaped === 'n' ? '\n' : escaped));
    if (!families.has(match[1]!)) families.set(match[1]!, new Map());
    families.get(match[1]!)!.set(queue, Number(match[3]));
  }
  return families;
}

const queueArbitrary = fc.record({
  name: fc.string({ unit: fc.constantFrom('a', 'b', '"', '\\', '\n', 'n', '.', 'é'), maxLength: 12 }),
  readyCount: fc.nat(1_000_000),
  unacked: fc.record({ size: fc.nat(1000) }),
  consumers: fc.array(fc.constant(null), { maxLength: 3 }),
});

describe('per-queue exposition', () => {
  it('every queue name and figure reads back exactly, one series per family', () => {
    const seed = announceSeed('per-queue exposition', testSeed);
    fc.assert(fc.property(fc.uniqueArray(queueArbitrary, { selector: (queue) => queue.name, maxLength: 20 }), (queues) => {
      const text = perQueueExposition(brokerWith(queues));
      expect(text.endsWith('\n')).toBe(true);
      const families = parseSeries(text);
      for (const [name] of queueFamilies) {
        expect(text).toContain(`# TYPE ${name} gauge\n`);
        expect(families.get(name)?.size ?? 0).toBe(queues.length);
      }
      for (const queue of queues) {
        expect(families.get('rabbitmq_queue_messages_ready')!.get(queue.name)).toBe(queue.readyCount);
        expect(families.get('rabbitmq_queue_messages_unacked')!.get(queue.name)).toBe(queue.unacked.size);
        expect(families.get('rabbitmq_queue_messages')!.get(queue.name)).toBe(queue.readyCount + queue.unacked.size);
        expect(families.get('rabbitmq_queue_consumers')!.get(queue.name)).toBe(queue.consumers.length);
      }
    }), { seed });
  });

  it('an escaped label value has no raw quote or newline and no lone backslash', () => {
    fc.assert(fc.property(fc.string({ unit: fc.constantFrom('x', '"', '\\', '\n'), maxLength: 16 }), (value) => {
      const escaped = escapeLabelValue(value);
      expect(escaped).not.toMatch(/\n/);
      expect(escaped.replace(/\\[\\"n]/g, '')).not.toMatch(/["\\]/);
    }), { seed: testSeed });
  });

  it('series stop at queueSeriesMax queues', () => {
    const queues = Array.from({ length: queueSeriesMax + 5 }, (_, i) => ({ name: `q${i}`, readyCount: 1, unacked: { size: 0 }, consumers: [] }));
    const families = parseSeries(perQueueExposition(brokerWith(queues)));
    expect(families.get('rabbitmq_queue_messages_ready')!.size).toBe(queueSeriesMax);
  });
});
