/**
 * Properties of topicPatternMatches (src/core/topic-pattern.ts) against a
 * regular-expression reference: the routing key is rewritten so that every word is
 * preceded by '.', which makes "zero words" (the empty key) and "one empty word"
 * different strings, and each pattern word becomes a piece of regular expression.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { topicPatternMatches } from '../../src/core/topic-pattern.js';
import { referencePatternMatches } from '../support/topic-references.js';
import { announceSeed } from '../support/kit.js';

const seed = announceSeed('test/property/topic-pattern');
const runs = { seed, numRuns: 2_000 } as const;

/** Words of routing keys; '*', '#' and "a*" are plain words inside a key. */
const keyWordArbitrary = fc.constantFrom('', '', 'a', 'b', 'eu', 'error', 'a*', '*', '#');
/** Pattern words: the wildcards often, and words that merely contain them. */
const patternWordArbitrary = fc.constantFrom('', 'a', 'b', 'eu', 'error', 'a*', '#b', '*', '*', '#', '#');

const keyWordsArbitrary = fc.array(keyWordArbitrary, { maxLength: 6 });

/** A pattern built from the key's own words, so that a good share of pairs match. */
function patternDerivedFrom(words: string[]): fc.Arbitrary<string> {
  const edit = fc.constantFrom('keep', 'keep', 'star', 'hash', 'keepThenHash', 'drop');
  return fc.array(edit, { minLength: words.length, maxLength: words.length }).map((edits) =>
    words
      .flatMap((word, index) => {
        switch (edits[index]) {
          case 'star': return ['*'];
          case 'hash': return ['#'];
          case 'keepThenHash': return [word, '#'];
          case 'drop': return [];
          default: return [word];
        }
      })
      .join('.'),
  );
}

const randomPatternArbitrary = fc.array(patternWordArbitrary, { maxLength: 6 }).map((words) => words.join('.'));

const keyAndPatternArbitrary = keyWordsArbitrary.chain((words) =>
  fc.tuple(fc.constant(words.join('.')), fc.oneof(randomPatternArbitrary, patternDerivedFrom(words))),
);

describe('topicPatternMatches agrees with a regular-expression reference', () => {
  it('on keys and patterns from a small word alphabet, empty words included', () => {
    let matched = 0;
    fc.assert(fc.property(keyAndPatternArbitrary, ([routingKey, pattern]) => {
      const expected = referencePatternMatches(routingKey, pattern);
      if (expected) matched++;
      expect(topicPatternMatches(routingKey, pattern)).toBe(expected);
    }), runs);
    expect(matched).toBeGreaterThan(runs.numRuns / 5);
  });

  it('"#" matches every key and a key without wildcards matches exactly itself', () => {
    fc.assert(fc.property(keyAndPatternArbitrary, ([routingKey, pattern]) => {
      expect(topicPatternMatches(routingKey, '#')).toBe(true);
      expect(topicPatternMatches(routingKey, routingKey)).toBe(true);
      if (!/(^|\.)[*#](\.|$)/.test(pattern)) expect(topicPatternMatches(routingKey, pattern)).toBe(routingKey === pattern);
    }), runs);
  });

  it('"#.#" means the same as "#", and "#.*" the same as "*.#"', () => {
    fc.assert(fc.property(keyAndPatternArbitrary, ([routingKey, pattern]) => {
      const doubled = pattern.replace(/(^|\.)#(?=\.|$)/g, '$1#.#');
      expect(topicPatternMatches(routingKey, doubled)).toBe(topicPatternMatches(routingKey, pattern));
      expect(topicPatternMatches(routingKey, '#.*')).toBe(topicPatternMatches(routingKey, '*.#'));
    }), runs);
  });
});
