/**
 * MQTT 5 subscription options in the projection and the snapshot: a sub
 * record written before options existed (or by a 3.1.1 client) reads as a
 * subscription with none, a re-SUBSCRIBE replaces the options with its own
 * [MQTT-3.8.4-3], UNSUBSCRIBE forgets them, and a snapshot row keeps its old
 * two-element shape unless the subscription has options.
 */
import { decode, encode } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { applySub, applyUnsub } from '../../src/projections/mqtt-sessions.js';
import { decodeState, encodeState, type EncodedState } from '../../src/projections/snapshot-codec.js';
import { initialState, newSession } from '../../src/projections/state.js';

describe('subscription options in the sessions projection', () => {
  it('reads an old sub body as no options, keeps new ones, replaces and forgets them', () => {
    const session = newSession('c');
    applySub(session, { c: 'c', f: 'old/#', qos: 1 });
    expect(session.subscriptionOptions.size).toBe(0);
    applySub(session, { c: 'c', f: 'new/#', qos: 2, nl: true, rap: true, rh: 2, id: 7 });
    expect(session.subscriptionOptions.get('new/#')).toEqual({ noLocal: true, retainAsPublished: true, retainHandling: 2, identifier: 7 });
    applySub(session, { c: 'c', f: 'new/#', qos: 2, id: 8 });
    expect(session.subscriptionOptions.get('new/#')).toEqual({ identifier: 8 });
    applySub(session, { c: 'c', f: 'new/#', qos: 2 });
    expect(session.subscriptionOptions.has('new/#')).toBe(false);
    applySub(session, { c: 'c', f: 'gone/#', qos: 0, rh: 1 });
    applyUnsub(session, { c: 'c', f: 'gone/#' });
    expect([...session.subscriptions.keys()]).toEqual(['old/#', 'new/#']);
    expect(session.subscriptionOptions.size).toBe(0);
  });

  it('a snapshot row has a third element only for a subscription with options; an old row reads as none', () => {
    const state = initialState();
    const session = newSession('c');
    state.sessions.set('c', session);
    applySub(session, { c: 'c', f: 'plain', qos: 1 });
    applySub(session, { c: 'c', f: 'opts', qos: 1, nl: true, id: 3 });
    const encoded = encodeState(state);
    expect(encoded.sessions[0]?.[1]).toEqual([['plain', 1], ['opts', 1, { nl: true, id: 3 }]]);
    const restored = decodeState(decode(encode(encoded)) as EncodedState);
    expect(restored.sessions.get('c')?.subscriptionOptions).toEqual(new Map([['opts', { noLocal: true, identifier: 3 }]]));
    expect(restored.sessions.get('c')?.subscriptions).toEqual(new Map([['plain', 1], ['opts', 1]]));
  });
});
