/**
 * AMQP topic exchange matching: the examples of the AMQP 0-9-1 specification and
 * of the RabbitMQ tutorial, the empty-word rules we took from RabbitMQ, and the
 * absence of exponential blow-up.
 */
import { describe, expect, it } from 'vitest';
import { topicPatternMatches } from '../../src/core/topic-pattern.js';

describe('topicPatternMatches', () => {
  it.each([
    // AMQP 0-9-1, exchange class: "*.stock.#" matches "usd.stock" and "eur.stock.db" but not "stock.nasdaq"
    ['usd.stock', '*.stock.#', true],
    ['eur.stock.db', '*.stock.#', true],
    ['stock.nasdaq', '*.stock.#', false],
    ['app.error', '*.error', true],
    ['error', '*.error', false],
    ['app.db.error', '*.error', false],
    ['app.db.error', '#.error', true],
    // '#' is zero or more words
    ['eu', 'eu.#', true],
    ['eu.west', 'eu.#', true],
    ['eu.west.db.primary', 'eu.#', true],
    ['euro', 'eu.#', false],
    ['eu.west.db', 'eu.west.db.*', false],
    ['eu.west.db.primary', 'eu.west.db.*', true],
    ['a.b.c', 'a.#.c', true],
    ['a.c', 'a.#.c', true],
    ['a.b.x.c', 'a.#.b.#.c', true], // the first '#' is empty, the second eats "x"
    ['a.x.c', 'a.#.b.#.c', false],
    ['a.b.x.b.c', 'a.#.b.#.c', true],
    // RabbitMQ tutorial five
    ['quick.orange.rabbit', '*.orange.*', true],
    ['lazy.orange.elephant', '*.*.rabbit', false],
    ['lazy.orange.male.rabbit', 'lazy.#', true],
    ['quick.orange.male.rabbit', '*.orange.*', false],
  ])('%j against %j is %s', (routingKey, pattern, expected) => {
    expect(topicPatternMatches(routingKey, pattern)).toBe(expected);
  });

  it.each([
    // The empty key is zero words, as in RabbitMQ's split_topic_key/1.
    ['', '#', true],
    ['', '', true],
    ['', '*', false],
    ['', '#.#', true],
    ['a', '', false],
    // Otherwise empty words are words: "a..b" is three, "." is two.
    ['a..b', 'a.*.b', true],
    ['a..b', 'a.b', false],
    ['a..b', '*.*.*', true],
    ['.', '*.*', true],
    ['.', '*', false],
    ['.', '.', true],
    ['a.', 'a.*', true],
    ['a.', 'a', false],
    ['a.', 'a.#', true],
    ['.a', '#.a', true],
    // Wildcards only count as whole words.
    ['ab', 'a*', false],
    ['a*', 'a*', true],
    ['x.b', '#b', false],
  ])('%j against %j is %s (RabbitMQ word splitting)', (routingKey, pattern, expected) => {
    expect(topicPatternMatches(routingKey, pattern)).toBe(expected);
  });

  it('stays fast on many "#" against a long key (no backtracking blow-up)', () => {
    const words = Array.from({ length: 1_000 }, (_, index) => `w${index % 7}`);
    const missing = [...words, 'y'].join('.');
    const present = [...words, 'x'].join('.');
    const start = performance.now();
    expect(topicPatternMatches(missing, '#.#.#.#.#.x')).toBe(false);
    expect(topicPatternMatches(present, '#.#.#.#.#.x')).toBe(true);
    expect(topicPatternMatches(missing, '#.w1.#.w2.#.w3.#.w4.#.x')).toBe(false);
    expect(topicPatternMatches(present, '*.#.*.#.*.#.*.#.*.x')).toBe(true);
    expect(performance.now() - start).toBeLessThan(100);
  });
});
