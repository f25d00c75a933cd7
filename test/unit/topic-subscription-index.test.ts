/**
 * SubscriptionIndex, case by case: overlapping subscriptions, QoS replacement,
 * '$' topics, removal and pruning.
 */
import { describe, expect, it } from 'vitest';
import { AssertionError } from '../../src/assert.js';
import { SubscriptionIndex } from '../../src/core/subscription-index.js';

describe('SubscriptionIndex', () => {
  it('delivers once per subscriber with the maximum QoS of its matching filters [MQTT-3.3.5-1]', () => {
    const index = new SubscriptionIndex<string>();
    index.add('sport/tennis/player1/#', 'alice', 0);
    index.add('sport/+/player1', 'alice', 2);
    index.add('#', 'alice', 1);
    index.add('sport/tennis/+', 'bob', 1);
    expect(index.match('sport/tennis/player1')).toEqual(new Map([['alice', 2], ['bob', 1]]));
    expect(index.match('sport/tennis/player1/ranking')).toEqual(new Map([['alice', 1]]));
    expect(index.match('weather')).toEqual(new Map([['alice', 1]]));
  });

  it('a second SUBSCRIBE to the same filter replaces its QoS [MQTT-3.8.4-3]', () => {
    const index = new SubscriptionIndex<string>();
    index.add('a/b', 'alice', 2);
    index.add('a/b', 'alice', 0);
    expect(index.size).toBe(1);
    expect(index.match('a/b')).toEqual(new Map([['alice', 0]]));
    expect(index.filtersOf('alice')).toEqual(new Map([['a/b', 0]]));
  });

  it('"sport/#" matches "sport" itself [MQTT-4.7.1-2]', () => {
    const index = new SubscriptionIndex<string>();
    index.add('sport/#', 'alice', 1);
    expect(index.match('sport')).toEqual(new Map([['alice', 1]]));
    expect(index.match('sports').size).toBe(0);
  });

  it('root wildcards do not match "$" topics, named "$" levels do [MQTT-4.7.2-1]', () => {
    const index = new SubscriptionIndex<string>();
    index.add('#', 'everything', 0);
    index.add('+/monitor/Clients', 'plus', 0);
    index.add('$SYS/#', 'sys', 0);
    index.add('$SYS/+/Clients', 'sysPlus', 0);
    expect([...index.match('$SYS/monitor/Clients').keys()].sort()).toEqual(['sys', 'sysPlus']);
    expect([...index.match('x/monitor/Clients').keys()].sort()).toEqual(['everything', 'plus']);
  });

  it('"/+" and "+/+" match "/finance", "+" does not', () => {
    const index = new SubscriptionIndex<string>();
    index.add('/+', 'slashPlus', 0);
    index.add('+/+', 'plusPlus', 0);
    index.add('+', 'plus', 0);
    expect([...index.match('/finance').keys()].sort()).toEqual(['plusPlus', 'slashPlus']);
    expect([...index.match('finance').keys()]).toEqual(['plus']);
  });

  it('remove takes away one filter and prunes what it emptied', () => {
    const index = new SubscriptionIndex<string>();
    index.add('a/b/c', 'alice', 1);
    index.add('a/+', 'alice', 1);
    index.add('a/b/c', 'bob', 0);
    const nodesBefore = index.nodeCount;
    expect(index.remove('a/b/c', 'alice')).toBe(true);
    expect(index.remove('a/b/c', 'alice')).toBe(false);
    expect(index.remove('never/subscribed', 'alice')).toBe(false);
    expect(index.nodeCount).toBe(nodesBefore); // bob still holds a/b/c
    expect(index.remove('a/b/c', 'bob')).toBe(true);
    expect(index.nodeCount).toBe(3); // root, 'a', '+'
    expect(index.match('a/b')).toEqual(new Map([['alice', 1]]));
  });

  it('removeAll drops every filter of one subscriber and leaves the others', () => {
    const index = new SubscriptionIndex<string>();
    index.add('a/#', 'alice', 1);
    index.add('b', 'alice', 2);
    index.add('b', 'bob', 0);
    expect(index.removeAll('alice')).toBe(2);
    expect(index.removeAll('alice')).toBe(0);
    expect(index.filtersOf('alice').size).toBe(0);
    expect(index.size).toBe(1);
    expect(index.match('b')).toEqual(new Map([['bob', 0]]));
    expect(index.removeAll('bob')).toBe(1);
    expect(index.nodeCount).toBe(1);
  });

  it('filtersOf returns a copy that cannot change the index', () => {
    const index = new SubscriptionIndex<string>();
    index.add('a', 'alice', 1);
    index.filtersOf('alice').set('b', 2);
    expect(index.filtersOf('alice')).toEqual(new Map([['a', 1]]));
  });

  it('an invalid filter reaching the index is a bug, not a subscription', () => {
    const index = new SubscriptionIndex<string>();
    expect(() => index.add('a/#/b', 'alice', 0)).toThrow(AssertionError);
    expect(index.size).toBe(0);
  });
});
