/**
 * TopicBindingIndex, case by case: queues bound by several patterns, the empty
 * key, removal, pruning, and many '#' against long keys.
 */
import { describe, expect, it } from 'vitest';
import { TopicBindingIndex } from '../../src/core/binding-index.js';

function sortedMatch(index: TopicBindingIndex<string>, routingKey: string): string[] {
  return [...index.match(routingKey)].sort();
}

describe('TopicBindingIndex', () => {
  it('routes the RabbitMQ tutorial bindings, each queue once', () => {
    const index = new TopicBindingIndex<string>();
    index.add('*.orange.*', 'Q1');
    index.add('*.*.rabbit', 'Q2');
    index.add('lazy.#', 'Q2');
    expect(sortedMatch(index, 'quick.orange.rabbit')).toEqual(['Q1', 'Q2']);
    expect(sortedMatch(index, 'lazy.orange.elephant')).toEqual(['Q1', 'Q2']);
    expect(sortedMatch(index, 'quick.orange.fox')).toEqual(['Q1']);
    expect(sortedMatch(index, 'lazy.brown.fox')).toEqual(['Q2']);
    expect(sortedMatch(index, 'lazy.pink.rabbit')).toEqual(['Q2']); // two patterns, one delivery
    expect(sortedMatch(index, 'quick.brown.fox')).toEqual([]);
    expect(sortedMatch(index, 'orange')).toEqual([]);
    expect(sortedMatch(index, 'lazy.orange.male.rabbit')).toEqual(['Q2']);
  });

  it('"*.error", "eu.#" and "eu.west.db.*"', () => {
    const index = new TopicBindingIndex<string>();
    index.add('*.error', 'errors');
    index.add('eu.#', 'eu');
    index.add('eu.west.db.*', 'db');
    expect(sortedMatch(index, 'app.error')).toEqual(['errors']);
    expect(sortedMatch(index, 'eu')).toEqual(['eu']);
    expect(sortedMatch(index, 'eu.west.db')).toEqual(['eu']);
    expect(sortedMatch(index, 'eu.west.db.primary')).toEqual(['db', 'eu']);
    expect(sortedMatch(index, 'eu.error')).toEqual(['errors', 'eu']);
  });

  it('the empty key is zero words: "#" and "" match it, "*" does not', () => {
    const index = new TopicBindingIndex<string>();
    index.add('#', 'hash');
    index.add('', 'empty');
    index.add('*', 'star');
    index.add('#.#', 'hashHash');
    expect(sortedMatch(index, '')).toEqual(['empty', 'hash', 'hashHash']);
    expect(sortedMatch(index, 'a')).toEqual(['hash', 'hashHash', 'star']);
    expect(sortedMatch(index, '.')).toEqual(['hash', 'hashHash']);
  });

  it('add reports duplicates, remove and removeQueue report what they removed, and the trie is pruned', () => {
    const index = new TopicBindingIndex<string>();
    expect(index.add('a.*.c', 'q1')).toBe(true);
    expect(index.add('a.*.c', 'q1')).toBe(false);
    expect(index.add('a.#', 'q1')).toBe(true);
    expect(index.add('a.*.c', 'q2')).toBe(true);
    expect(index.size).toBe(3);
    expect(index.remove('a.*.c', 'q1')).toBe(true);
    expect(index.remove('a.*.c', 'q1')).toBe(false);
    expect(sortedMatch(index, 'a.b.c')).toEqual(['q1', 'q2']); // q1 still through "a.#"
    expect(index.removeQueue('q1')).toBe(1);
    expect(index.removeQueue('q1')).toBe(0);
    expect(sortedMatch(index, 'a.b.c')).toEqual(['q2']);
    expect(index.remove('a.*.c', 'q2')).toBe(true);
    expect(index.size).toBe(0);
    expect(index.nodeCount).toBe(1);
  });

  // A backtracking matcher would need ~C(1000, 5) steps here and never finish: the test's own
  // timeout is the bound, not a wall-clock assertion that a loaded CI machine can miss.
  it('stays fast with chains of "#" against a 1,000-word key', { timeout: 10_000 }, () => {
    const index = new TopicBindingIndex<string>();
    index.add('#.#.#.#.#.x', 'chain');
    index.add('#.w1.#.w2.#.w3.#.x', 'interleaved');
    index.add('*.#.*.#.*.#.y', 'stars');
    const words = Array.from({ length: 1_000 }, (_, position) => `w${position % 7}`);
    expect(sortedMatch(index, [...words, 'x'].join('.'))).toEqual(['chain', 'interleaved']);
    expect(sortedMatch(index, [...words, 'y'].join('.'))).toEqual(['stars']);
    expect(sortedMatch(index, [...words, 'z'].join('.'))).toEqual([]);
  });
});
