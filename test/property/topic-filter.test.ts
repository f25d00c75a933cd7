/**
 * Properties of src/core/topic-filter.ts against reference models written
 * differently: validity as one regular expression plus UTF-8 round-trip checks,
 * and matching by translating the filter into a regular expression.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { topicMatchesFilter, validateTopicFilter, validateTopicName } from '../../src/core/topic-filter.js';
import { referenceMatches } from '../support/topic-references.js';
import { announceSeed } from '../support/kit.js';

const seed = announceSeed('test/property/topic-filter');
const runs = { seed, numRuns: 1_000 } as const;

/** Small alphabets so that interesting strings ('+' next to '/', '$' first...) are common. */
const characterArbitrary = fc.constantFrom('a', 'b', '/', '/', '+', '#', '$', ' ', 'é', '😀', '\u0000', '\uD800', '\uDC00');
const anyTopicLikeString = fc.string({ unit: characterArbitrary, maxLength: 10 });
const levelArbitrary = fc.constantFrom('', 'a', 'b', 'sport', 'tennis', '$sys', '$SYS', 'a b', 'é');

function isWellFormedUtf8(value: string): boolean {
  return Buffer.from(value, 'utf8').toString('utf8') === value && Buffer.byteLength(value, 'utf8') <= 65_535;
}

function referenceFilterIsValid(filter: string): boolean {
  return filter.length > 0 && !filter.includes('\u0000') && isWellFormedUtf8(filter) &&
    /^(?:(?:\+|[^/+#]*)\/)*(?:\+|[^/+#]*|#)$/.test(filter);
}

function referenceTopicNameIsValid(topic: string): boolean {
  return topic.length > 0 && !topic.includes('\u0000') && isWellFormedUtf8(topic) && !/[+#]/.test(topic);
}

// A single empty level would be the empty topic, which is invalid [MQTT-4.7.3-1].
const topicLevelsArbitrary = fc
  .array(levelArbitrary, { minLength: 1, maxLength: 5 })
  .filter((levels) => levels.join('/') !== '');
const topicArbitrary = topicLevelsArbitrary.map((levels) => levels.join('/'));

const randomFilterArbitrary = fc
  .tuple(fc.array(fc.oneof(levelArbitrary, fc.constant('+')), { maxLength: 5 }), fc.boolean())
  .map(([levels, endsWithHash]) => (endsWithHash ? [...levels, '#'] : levels).join('/'))
  .filter((filter) => filter !== '');

/** A filter built from the topic itself, so that a good share of pairs match. */
function filterDerivedFrom(levels: string[]): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.array(fc.boolean(), { minLength: levels.length, maxLength: levels.length }),
      fc.integer({ min: 0, max: levels.length }),
      fc.boolean(),
    )
    .map(([plusMask, cut, endsWithHash]) => {
      const filterLevels = levels.map((level, index) => (plusMask[index] === true ? '+' : level));
      return (endsWithHash ? [...filterLevels.slice(0, cut), '#'] : filterLevels).join('/');
    });
}

const topicAndFilterArbitrary = topicLevelsArbitrary.chain((levels) =>
  fc.tuple(fc.constant(levels.join('/')), fc.oneof(randomFilterArbitrary, filterDerivedFrom(levels))),
);

describe('MQTT topic validation agrees with a reference validator', () => {
  it('validateTopicFilter [MQTT-4.7.1-2] [MQTT-4.7.1-3] [MQTT-4.7.3-1] [MQTT-4.7.3-2] [MQTT-1.5.3-1]', () => {
    fc.assert(fc.property(anyTopicLikeString, (filter) => {
      expect(validateTopicFilter(filter) === undefined).toBe(referenceFilterIsValid(filter));
    }), runs);
  });

  it('validateTopicName [MQTT-3.3.2-2] [MQTT-4.7.3-1] [MQTT-4.7.3-2]', () => {
    fc.assert(fc.property(anyTopicLikeString, (topic) => {
      expect(validateTopicName(topic) === undefined).toBe(referenceTopicNameIsValid(topic));
    }), runs);
  });

  it('every generated topic and filter is valid, so the matching properties test real inputs', () => {
    fc.assert(fc.property(topicAndFilterArbitrary, ([topic, filter]) => {
      expect(validateTopicName(topic)).toBeUndefined();
      expect(validateTopicFilter(filter)).toBeUndefined();
    }), runs);
  });

  it('a reason is a non-empty sentence, never an empty string', () => {
    fc.assert(fc.property(anyTopicLikeString, (value) => {
      for (const reason of [validateTopicFilter(value), validateTopicName(value)]) {
        if (reason !== undefined) expect(reason.length).toBeGreaterThan(10);
      }
    }), runs);
  });
});

describe('topicMatchesFilter agrees with a regular-expression reference', () => {
  it('on topics and filters from a small level alphabet [MQTT-4.7.1-2] [MQTT-4.7.1-3] [MQTT-4.7.2-1]', () => {
    let matched = 0;
    fc.assert(fc.property(topicAndFilterArbitrary, ([topic, filter]) => {
      const expected = referenceMatches(topic, filter);
      if (expected) matched++;
      expect(topicMatchesFilter(topic, filter)).toBe(expected);
    }), runs);
    // The generators are only useful if a fair share of pairs match.
    expect(matched).toBeGreaterThan(runs.numRuns / 5);
  });

  it('a topic used as a filter matches exactly itself', () => {
    fc.assert(fc.property(topicArbitrary, topicArbitrary, (topic, other) => {
      expect(topicMatchesFilter(topic, topic)).toBe(true);
      expect(topicMatchesFilter(other, topic)).toBe(other === topic);
    }), runs);
  });
});
