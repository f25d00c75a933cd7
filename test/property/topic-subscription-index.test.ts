/**
 * SubscriptionIndex after random add / remove / removeAll sequences behaves like
 * a naive model: a list of (subscriber, filter, qos, No Local) matched one by one with a
 * regular-expression reference matcher; a match on behalf of a publisher leaves out its
 * own No Local subscriptions [MQTT-3.8.3-3].
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SubscriptionIndex } from '../../src/core/subscription-index.js';
import { referenceMatches } from '../support/topic-references.js';
import { announceSeed } from '../support/kit.js';

const seed = announceSeed('test/property/topic-subscription-index');
const runs = { seed, numRuns: 300 } as const;

type Qos = 0 | 1 | 2;

const levelArbitrary = fc.constantFrom('', 'a', 'a', 'b', '$sys');
const topicArbitrary = fc
  .array(levelArbitrary, { minLength: 1, maxLength: 3 })
  .map((levels) => levels.join('/'))
  .filter((topic) => topic !== '');
const filterArbitrary = fc
  .tuple(fc.array(fc.oneof(levelArbitrary, fc.constant('+')), { maxLength: 3 }), fc.boolean())
  .map(([levels, endsWithHash]) => (endsWithHash ? [...levels, '#'] : levels).join('/'))
  .filter((filter) => filter !== '');
const subscriberArbitrary = fc.constantFrom('s0', 's1', 's2', 's3');
const qosArbitrary = fc.constantFrom<Qos>(0, 1, 2);

const operationArbitrary = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('add' as const), filter: filterArbitrary, subscriber: subscriberArbitrary, qos: qosArbitrary, noLocal: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('remove' as const), filter: filterArbitrary, subscriber: subscriberArbitrary }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('removeAll' as const), subscriber: subscriberArbitrary }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('match' as const), topic: topicArbitrary, publisher: fc.option(subscriberArbitrary, { nil: undefined }) }) },
);

/** The model: a flat list, one entry per (subscriber, filter). */
class SubscriptionListModel {
  entries: Array<{ subscriber: string; filter: string; qos: Qos; noLocal: boolean }> = [];

  add(filter: string, subscriber: string, qos: Qos, noLocal = false): void {
    this.entries = this.entries.filter((entry) => !(entry.subscriber === subscriber && entry.filter === filter));
    this.entries.push({ subscriber, filter, qos, noLocal });
  }

  remove(filter: string, subscriber: string): boolean {
    const before = this.entries.length;
    this.entries = this.entries.filter((entry) => !(entry.subscriber === subscriber && entry.filter === filter));
    return this.entries.length !== before;
  }

  removeAll(subscriber: string): number {
    const before = this.entries.length;
    this.entries = this.entries.filter((entry) => entry.subscriber !== subscriber);
    return before - this.entries.length;
  }

  match(topic: string, publisher?: string): Map<string, Qos> {
    const result = new Map<string, Qos>();
    for (const { subscriber, filter, qos, noLocal } of this.entries) {
      if (!referenceMatches(topic, filter) || (noLocal && subscriber === publisher)) continue;
      result.set(subscriber, Math.max(result.get(subscriber) ?? 0, qos) as Qos);
    }
    return result;
  }

  filtersOf(subscriber: string): Map<string, Qos> {
    return new Map(this.entries.filter((entry) => entry.subscriber === subscriber).map((entry) => [entry.filter, entry.qos]));
  }
}

function sorted(map: ReadonlyMap<string, Qos>): Array<[string, Qos]> {
  return [...map].sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
}

describe('SubscriptionIndex agrees with a naive list model', () => {
  it('after random add/remove/removeAll: match gives each subscriber once with its maximum QoS [MQTT-3.3.5-1] [MQTT-3.8.4-3] [MQTT-4.7.2-1]', () => {
    let matches = 0;
    let nonEmptyMatches = 0;
    fc.assert(fc.property(fc.array(operationArbitrary, { maxLength: 60 }), fc.array(topicArbitrary, { minLength: 3, maxLength: 3 }), (operations, probes) => {
      const index = new SubscriptionIndex<string>();
      const model = new SubscriptionListModel();
      for (const operation of operations) {
        switch (operation.kind) {
          case 'add':
            index.add(operation.filter, operation.subscriber, operation.qos, operation.noLocal);
            model.add(operation.filter, operation.subscriber, operation.qos, operation.noLocal);
            break;
          case 'remove':
            expect(index.remove(operation.filter, operation.subscriber)).toBe(model.remove(operation.filter, operation.subscriber));
            break;
          case 'removeAll':
            expect(index.removeAll(operation.subscriber)).toBe(model.removeAll(operation.subscriber));
            break;
          case 'match': {
            const expected = model.match(operation.topic, operation.publisher);
            matches++;
            if (expected.size > 0) nonEmptyMatches++;
            expect(sorted(index.match(operation.topic, operation.publisher))).toEqual(sorted(expected));
            break;
          }
        }
        expect(index.size).toBe(model.entries.length);
      }
      for (const topic of probes) expect(sorted(index.match(topic))).toEqual(sorted(model.match(topic)));
      for (const subscriber of ['s0', 's1', 's2', 's3']) {
        expect(sorted(index.filtersOf(subscriber))).toEqual(sorted(model.filtersOf(subscriber)));
      }
    }), runs);
    // The generators are only useful if a fair share of lookups find someone.
    expect(nonEmptyMatches / matches).toBeGreaterThan(0.1);
  });

  it('removing every subscription prunes the trie back to its root', () => {
    fc.assert(fc.property(fc.array(fc.tuple(filterArbitrary, subscriberArbitrary, qosArbitrary), { maxLength: 40 }), fc.boolean(), (subscriptions, bySubscriber) => {
      const index = new SubscriptionIndex<string>();
      for (const [filter, subscriber, qos] of subscriptions) index.add(filter, subscriber, qos);
      if (bySubscriber) {
        for (const subscriber of ['s0', 's1', 's2', 's3']) index.removeAll(subscriber);
      } else {
        for (const [filter, subscriber] of subscriptions) index.remove(filter, subscriber);
      }
      expect(index.size).toBe(0);
      expect(index.nodeCount).toBe(1);
    }), runs);
  });
});
