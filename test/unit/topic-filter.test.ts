/**
 * The examples of MQTT 3.1.1 section 4.7 (topic names and filters), one per case,
 * against validateTopicFilter, validateTopicName and topicMatchesFilter.
 */
import { describe, expect, it } from 'vitest';
import { topicMatchesFilter, validateTopicFilter, validateTopicName } from '../../src/core/topic-filter.js';

describe('validateTopicFilter', () => {
  it.each(['sport/tennis/player1/#', 'sport/#', '#', '+', '+/tennis/#', 'sport/+/player1', '/+', '+/+', '/', '//', '$SYS/#', 'a b/é/😀'])(
    'accepts %j [MQTT-4.7.1-2] [MQTT-4.7.1-3]',
    (filter) => expect(validateTopicFilter(filter)).toBeUndefined(),
  );

  it.each([
    ['', 'at least one character'],
    ['sport/tennis#', "'#' must occupy a whole level"],
    ['sport/tennis/#/ranking', "'#' must be the last level"],
    ['#/', "'#' must be the last level"],
    ['sport+', "'+' must occupy a whole level"],
    ['sport/+tennis', "'+' must occupy a whole level"],
    ['a/\u0000', 'null character'],
    ['a/\uD800', 'lone surrogate'],
  ])('rejects %j: %s', (filter, reason) => {
    expect(validateTopicFilter(filter)).toContain(reason);
  });
});

describe('validateTopicName', () => {
  it.each(['sport/tennis/player1', '/finance', '$SYS/broker/uptime', '/', 'a b'])('accepts %j', (topic) => {
    expect(validateTopicName(topic)).toBeUndefined();
  });

  it.each([
    ['', 'at least one character'],
    ['sport/+', 'wildcards'],
    ['sport/#', 'wildcards'],
    ['sport#', 'wildcards'],
    ['a\u0000b', 'null character'],
  ])('rejects %j: %s [MQTT-3.3.2-2] [MQTT-4.7.3-1]', (topic, reason) => {
    expect(validateTopicName(topic)).toContain(reason);
  });
});

describe('the 65,535-byte limit counts UTF-8 bytes, not characters [MQTT-4.7.3-3]', () => {
  it.each([
    ['a'.repeat(65_535), true],
    ['a'.repeat(65_536), false],
    ['é'.repeat(32_767) + 'a', true], // 'é' is two bytes: 65,535 in all
    ['é'.repeat(32_768), false],
    ['😀'.repeat(16_384), false], // four bytes each, though only 32,768 UTF-16 units
    ['😀'.repeat(16_383) + 'abc', true],
  ])('a string of %#', (value, valid) => {
    expect(validateTopicName(value) === undefined).toBe(valid);
    expect(validateTopicFilter(value) === undefined).toBe(valid);
  });
});

describe('topicMatchesFilter, the examples of section 4.7', () => {
  it.each([
    // "sport/tennis/player1/#" [MQTT-4.7.1-2]
    ['sport/tennis/player1', 'sport/tennis/player1/#', true],
    ['sport/tennis/player1/ranking', 'sport/tennis/player1/#', true],
    ['sport/tennis/player1/score/wimbledon', 'sport/tennis/player1/#', true],
    ['sport/tennis/player2', 'sport/tennis/player1/#', false],
    // "sport/#" also matches the parent level "sport"
    ['sport', 'sport/#', true],
    ['sport/', 'sport/#', true],
    ['sports', 'sport/#', false],
    // '+' is exactly one level, which may be empty [MQTT-4.7.1-3]
    ['sport/tennis/player1', 'sport/tennis/+', true],
    ['sport/tennis/player1/ranking', 'sport/tennis/+', false],
    ['sport', 'sport/+', false],
    ['sport/', 'sport/+', true],
    ['/finance', '+/+', true],
    ['/finance', '/+', true],
    ['/finance', '+', false],
    ['finance', '+', true],
    ['a//b', 'a/+/b', true],
    // '#' alone matches everything that does not start with '$'
    ['sport/tennis', '#', true],
    ['/', '#', true],
  ])('%j against %j is %s', (topic, filter, expected) => {
    expect(topicMatchesFilter(topic, filter)).toBe(expected);
  });

  it.each([
    // A filter starting with a wildcard does not match a '$' topic [MQTT-4.7.2-1]
    ['$SYS/x', '#', false],
    ['$SYS/monitor/Clients', '+/monitor/Clients', false],
    ['$SYS', '+', false],
    // but a filter naming the '$' level does
    ['$SYS/monitor/Clients', '$SYS/#', true],
    ['$SYS/monitor/Clients', '$SYS/monitor/+', true],
    ['$SYS', '$SYS/#', true],
    // and the rule is about the first character only
    ['a/$SYS', '+/$SYS', true],
    ['a/$SYS', '#', true],
  ])('%j against %j is %s [MQTT-4.7.2-1]', (topic, filter, expected) => {
    expect(topicMatchesFilter(topic, filter)).toBe(expected);
  });

  it('levels are case-sensitive and spaces are ordinary characters [MQTT-4.7.3-4]', () => {
    expect(topicMatchesFilter('ACCOUNTS', 'accounts')).toBe(false);
    expect(topicMatchesFilter('Accounts payable', 'Accounts payable')).toBe(true);
  });
});
