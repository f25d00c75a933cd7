/**
 * TopicBindingIndex after random add / remove / removeQueue sequences behaves like
 * a naive model: a list of (pattern, queue) bindings matched one by one with a
 * regular-expression reference of RabbitMQ's topic matching.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TopicBindingIndex } from '../../src/core/binding-index.js';
import { topicPatternMatches } from '../../src/core/topic-pattern.js';
import { referencePatternMatches } from '../support/topic-references.js';
import { announceSeed } from '../support/kit.js';

const seed = announceSeed('test/property/topic-binding-index');
const runs = { seed, numRuns: 300 } as const;

const keyWordArbitrary = fc.constantFrom('', 'a', 'b', 'a*', '*', '#');
const patternWordArbitrary = fc.constantFrom('', 'a', 'b', 'a*', '*', '*', '#', '#');
const routingKeyArbitrary = fc.array(keyWordArbitrary, { maxLength: 4 }).map((words) => words.join('.'));
const patternArbitrary = fc.array(patternWordArbitrary, { maxLength: 4 }).map((words) => words.join('.'));
const queueArbitrary = fc.constantFrom('q0', 'q1', 'q2', 'q3');

const operationArbitrary = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('add' as const), pattern: patternArbitrary, queue: queueArbitrary }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('remove' as const), pattern: patternArbitrary, queue: queueArbitrary }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('removeQueue' as const), queue: queueArbitrary }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('match' as const), routingKey: routingKeyArbitrary }) },
);

class BindingListModel {
  bindings: Array<{ pattern: string; queue: string }> = [];

  add(pattern: string, queue: string): boolean {
    if (this.bindings.some((binding) => binding.pattern === pattern && binding.queue === queue)) return false;
    this.bindings.push({ pattern, queue });
    return true;
  }

  remove(pattern: string, queue: string): boolean {
    const before = this.bindings.length;
    this.bindings = this.bindings.filter((binding) => !(binding.pattern === pattern && binding.queue === queue));
    return this.bindings.length !== before;
  }

  removeQueue(queue: string): number {
    const before = this.bindings.length;
    this.bindings = this.bindings.filter((binding) => binding.queue !== queue);
    return before - this.bindings.length;
  }

  match(routingKey: string): string[] {
    const queues = this.bindings.filter((binding) => referencePatternMatches(routingKey, binding.pattern)).map((binding) => binding.queue);
    return [...new Set(queues)].sort();
  }
}

describe('TopicBindingIndex agrees with a naive list model', () => {
  it('after random add/remove/removeQueue: match gives each matching queue once', () => {
    let matches = 0;
    let nonEmptyMatches = 0;
    fc.assert(fc.property(fc.array(operationArbitrary, { maxLength: 60 }), fc.array(routingKeyArbitrary, { minLength: 3, maxLength: 3 }), (operations, probes) => {
      const index = new TopicBindingIndex<string>();
      const model = new BindingListModel();
      for (const operation of operations) {
        switch (operation.kind) {
          case 'add':
            expect(index.add(operation.pattern, operation.queue)).toBe(model.add(operation.pattern, operation.queue));
            break;
          case 'remove':
            expect(index.remove(operation.pattern, operation.queue)).toBe(model.remove(operation.pattern, operation.queue));
            break;
          case 'removeQueue':
            expect(index.removeQueue(operation.queue)).toBe(model.removeQueue(operation.queue));
            break;
          case 'match': {
            const expected = model.match(operation.routingKey);
            matches++;
            if (expected.length > 0) nonEmptyMatches++;
            expect([...index.match(operation.routingKey)].sort()).toEqual(expected);
            break;
          }
        }
        expect(index.size).toBe(model.bindings.length);
      }
      for (const routingKey of probes) expect([...index.match(routingKey)].sort()).toEqual(model.match(routingKey));
    }), runs);
    // The generators are only useful if a fair share of lookups find a queue.
    expect(nonEmptyMatches / matches).toBeGreaterThan(0.1);
  });

  it('one binding: the index matches exactly when topicPatternMatches does', () => {
    fc.assert(fc.property(patternArbitrary, routingKeyArbitrary, (pattern, routingKey) => {
      const index = new TopicBindingIndex<string>();
      index.add(pattern, 'q');
      expect(index.match(routingKey).has('q')).toBe(topicPatternMatches(routingKey, pattern));
    }), { seed, numRuns: 3_000 });
  });

  it('removing every binding prunes the trie back to its root', () => {
    fc.assert(fc.property(fc.array(fc.tuple(patternArbitrary, queueArbitrary), { maxLength: 40 }), fc.boolean(), (bindings, byQueue) => {
      const index = new TopicBindingIndex<string>();
      for (const [pattern, queue] of bindings) index.add(pattern, queue);
      if (byQueue) {
        for (const queue of ['q0', 'q1', 'q2', 'q3']) index.removeQueue(queue);
      } else {
        for (const [pattern, queue] of bindings) index.remove(pattern, queue);
      }
      expect(index.size).toBe(0);
      expect(index.nodeCount).toBe(1);
      expect(index.match('').size).toBe(0);
    }), runs);
  });
});
