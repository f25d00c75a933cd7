/**
 * A JetStream log's stream message (src/log/jetstream/stream-message.ts) and the
 * frames held from it (held-frames.ts): a batch decodes into its frames, each
 * checked (checksum, length, an LSN that follows); a message written before
 * batching is a batch of one; a fence takes one LSN (its header's, or the one
 * after the message before it); the message index maps LSNs to the sequences
 * retention purges by. Byte flips are a property: any flipped byte of a batch
 * is caught, naming the message's sequence.
 */
import { headers } from '@nats-io/transport-node';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HeldFrames } from '../../src/log/jetstream/held-frames.js';
import { decodeHeldFrame, decodeStreamMessage, fenceHeaders, fenceLsnHeader } from '../../src/log/jetstream/stream-message.js';
import { encodeFrame } from '../../src/log/record.js';
import { announceSeed } from '../support/kit.js';

const record = (n: number) => ({ kind: 5, timestamp: 1_700_000_000_000 + n, body: { n, payload: new Uint8Array(n % 50).fill(n & 0xff) } });
const batch = (firstLsn: number, count: number): Buffer => Buffer.concat(Array.from({ length: count }, (_, i) => encodeFrame(firstLsn + i, record(firstLsn + i))));

describe('a JetStream log stream message', () => {
  it('a batch decodes into its frames, in LSN order, from the LSN expected or (first read) from its own', () => {
    for (const expectedLsn of [17, undefined]) {
      const decoded = decodeStreamMessage('s', { seq: 4, data: batch(17, 5), headers: undefined }, expectedLsn);
      expect(decoded.firstLsn).toBe(17);
      expect(decoded.frames.map((frame) => decodeHeldFrame(frame!).body)).toEqual([17, 18, 19, 20, 21].map((n) => record(n).body));
    }
  });

  it('a message written before batching (one frame, LSN = sequence) is a batch of one', () => {
    expect(decodeStreamMessage('s', { seq: 9, data: encodeFrame(9, record(9)), headers: undefined }, 9)).toMatchObject({ firstLsn: 9, frames: [expect.any(Buffer)] });
  });

  it('a batch that does not start at the LSN expected, skips one inside, or ends inside a frame is refused, naming the sequence', () => {
    expect(() => decodeStreamMessage('s', { seq: 4, data: batch(17, 3), headers: undefined }, 16)).toThrow(/message 4: the frame holds LSN 17 where 16 was expected/);
    const gap = Buffer.concat([encodeFrame(17, record(17)), encodeFrame(19, record(19))]);
    expect(() => decodeStreamMessage('s', { seq: 4, data: gap, headers: undefined }, undefined)).toThrow(/message 4: the frame holds LSN 19 where 18 was expected/);
    const whole = batch(17, 3);
    expect(() => decodeStreamMessage('s', { seq: 4, data: whole.subarray(0, whole.length - 1), headers: undefined }, 17)).toThrow(/message 4: no whole frame at byte/);
  });

  it('any flipped byte of a batch is caught (property)', () => {
    const seed = announceSeed('stream message: flipped byte');
    const data = batch(3, 4);
    fc.assert(fc.property(fc.nat(data.length - 1), fc.integer({ min: 1, max: 255 }), (at, xor) => {
      const damaged = Buffer.from(data);
      damaged[at] = damaged[at]! ^ xor;
      expect(() => decodeStreamMessage('s', { seq: 2, data: damaged, headers: undefined }, 3)).toThrow(expect.objectContaining({ code: 'ECORRUPTRECORD', message: expect.stringContaining('message 2') as unknown }));
    }), { seed, numRuns: 300 });
  });

  it('a fence takes the LSN its header names, or without one the LSN expected, or its sequence when first read', () => {
    const empty = new Uint8Array(0);
    expect(decodeStreamMessage('s', { seq: 3, data: empty, headers: fenceHeaders(40) }, undefined)).toEqual({ firstLsn: 40, frames: [undefined] });
    expect(decodeStreamMessage('s', { seq: 3, data: empty, headers: fenceHeaders(40) }, 40)).toEqual({ firstLsn: 40, frames: [undefined] });
    expect(decodeStreamMessage('s', { seq: 3, data: empty, headers: undefined }, 40)).toEqual({ firstLsn: 40, frames: [undefined] });
    expect(decodeStreamMessage('s', { seq: 3, data: empty, headers: undefined }, undefined)).toEqual({ firstLsn: 3, frames: [undefined] });
    expect(() => decodeStreamMessage('s', { seq: 3, data: empty, headers: fenceHeaders(41) }, 40)).toThrow(/message 3: a fence naming LSN '41' where 40 was expected/);
    const bad = headers();
    bad.set(fenceLsnHeader, 'x');
    expect(() => decodeStreamMessage('s', { seq: 3, data: empty, headers: bad }, undefined)).toThrow(/a fence naming LSN 'x'/);
  });
});

describe('the frames held from a stream', () => {
  /** Messages at sequences 5.. holding LSNs 10-12, a fence at 13, 14-15, 16. */
  function held(): HeldFrames {
    const frames = new HeldFrames(5, undefined);
    const hold = (sequence: number, firstLsn: number, count: number) => {
      const decoded = decodeStreamMessage('s', { seq: sequence, data: batch(firstLsn, count), headers: undefined }, frames.expectedLsn);
      frames.holdMessage(sequence, decoded.firstLsn, decoded.frames);
    };
    hold(5, 10, 3);
    frames.holdMessage(6, 13, [undefined]);
    hold(7, 14, 2);
    hold(8, 16, 1);
    return frames;
  }

  it('starts where the first message read says, and maps every LSN to the sequence of the message holding it', () => {
    const frames = held();
    expect({ firstLsn: frames.firstLsn, nextLsn: frames.nextLsn, firstSequence: frames.firstSequence, nextSequence: frames.nextSequence }).toEqual({ firstLsn: 10, nextLsn: 17, firstSequence: 5, nextSequence: 9 });
    expect([9, 10, 11, 12, 13, 14, 15, 16, 17].map((lsn) => frames.sequenceHolding(lsn))).toEqual([undefined, 5, 5, 5, 6, 7, 7, 8, undefined]);
    expect(frames.get(13)).toBeUndefined();
    expect(decodeHeldFrame(frames.get(15)!).body).toEqual(record(15).body);
  });

  it('retention drops whole messages: the first LSN held is the first of the first message kept', () => {
    const frames = held();
    frames.dropBelowSequence(7);
    expect({ firstLsn: frames.firstLsn, firstSequence: frames.firstSequence, holding14: frames.sequenceHolding(14), holding12: frames.sequenceHolding(12) }).toEqual({ firstLsn: 14, firstSequence: 7, holding14: 7, holding12: undefined });
    expect(frames.get(12)).toBeUndefined();
    expect(frames.get(14)).toBeDefined();
  });

  it('a writer\'s records not yet in a message are in none, and survive dropping every message', () => {
    const frames = new HeldFrames(1, 1);
    for (let lsn = 1; lsn <= 5; lsn++) frames.push(lsn, encodeFrame(lsn, record(lsn)));
    frames.endMessage(1, 3);
    expect([1, 3, 4, 5].map((lsn) => frames.sequenceHolding(lsn))).toEqual([1, 1, undefined, undefined]);
    frames.dropBelowSequence(2);
    expect({ firstLsn: frames.firstLsn, nextLsn: frames.nextLsn, nextSequence: frames.nextSequence }).toEqual({ firstLsn: 4, nextLsn: 6, nextSequence: 2 });
    expect(decodeHeldFrame(frames.get(4)!).body).toEqual(record(4).body);
  });
});
