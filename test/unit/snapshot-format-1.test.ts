/**
 * A data directory written by Cairn 0.1 holds format-1 snapshots (every queued
 * message's payload inline). They still open: the messages become held
 * entries (in memory, not read from the log, so segments that the old
 * retention removed do not matter) and are delivered byte for byte; the next
 * snapshot is written as format 2 with those messages inline.
 */
import { decode, encode } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { MemoryLog } from '../../src/core/record-log.js';
import { decodeState, encodeState, snapshotFormatVersion, type EncodedState } from '../../src/projections/snapshot-codec.js';

const message = (lsn: number, text: string) => ({ lsn, timestamp: 1, topic: 'q', exchange: '', payload: new Uint8Array(Buffer.from(text)), properties: new Uint8Array([0x10, 0, 2]), from: 'p' });

const version1 = {
  v: 1, lastLsn: 5, lastTimestamp: 1,
  messages: [message(3, 'first'), message(4, 'second'), { lsn: 5, timestamp: 1, topic: 't', payload: new Uint8Array(Buffer.from('for the session')), qos: 1 }],
  sessions: [['sub', [['t', 1]], [[1, 5, 1, 2]], 2, [], [], 0]],
  retained: [],
  exchanges: [],
  queues: [['q', false, [[1, 3, 1, 0], [2, 4, 1, 1]], 3, 0]],
  bindings: [],
  collections: [],
};

describe('format-1 snapshots', () => {
  it('open with their messages held, deliver them, and re-encode as format 2', () => {
    const state = decodeState(decode(encode(version1)) as EncodedState);
    const queue = state.queues.get('q')!;
    expect([...queue.pending.entries()].map((e) => [e.seq, e.lsn, e.deliveries, Buffer.from(e.held!.payload).toString()])).toEqual([[1, 3, 0, 'first'], [2, 4, 1, 'second']]);
    expect(state.sessions.get('sub')!.pending.first()).toMatchObject({ seq: 1, lsn: 5, deliveries: 2 });

    // A broker over a log that no longer holds those records still delivers them (held), requeues keep them.
    const log = new MemoryLog();
    // Records 1..5 exist (the snapshot covers them); what they say does not matter here.
    for (let lsn = 1; lsn <= 5; lsn++) log.records.push({ lsn, kind: 1, timestamp: 1, body: { c: 'other', op: 'open' } });
    log.snapshot = { lsn: 5, data: encode(version1) };
    const broker = Broker.open({ log });
    const first = broker.amqp.get('q', { noAck: false, owner: 'o' }).delivery!;
    expect(Buffer.from(first.message.body).toString()).toBe('first');
    expect(first.redelivered).toBe(false);
    broker.amqp.settle(first, 'requeue');
    const again = broker.amqp.get('q', { noAck: false, owner: 'o' }).delivery!;
    expect(Buffer.from(again.message.body).toString()).toBe('first');
    expect(again.redelivered).toBe(true);

    const reencoded = encodeState(broker.state);
    expect(reencoded.v).toBe(snapshotFormatVersion);
    const roundTrip = decodeState(decode(encode(reencoded)) as EncodedState);
    expect(Buffer.from(roundTrip.queues.get('q')!.pending.get(2)!.held!.payload).toString()).toBe('second');
  });

  it('refuses a format it does not know, naming it', () => {
    expect(() => decodeState({ ...version1, v: 9 } as unknown as EncodedState)).toThrow(/snapshot format version 9 is not supported/);
  });
});
