/**
 * The decoder's memo of the last PUBLISH topic (src/protocols/mqtt/topic-memo.ts): one decoder
 * fed a sequence of PUBLISHes, their topics drawn from a few byte sequences (same lengths with
 * other bytes, wildcards, U+0000, a real U+FFFD and ill-formed bytes that decode to the same
 * string, a topic longer than the memo keeps), decides every packet as a fresh decoder does,
 * topic for topic and refusal for refusal.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PacketDecoder } from '../../src/protocols/mqtt/codec.js';
import { announceSeed, testSeed } from '../support/kit.js';

const topicBytes: readonly Buffer[] = [
  Buffer.from('a/b'),
  Buffer.from('a/c'),
  Buffer.from('+/b'),
  Buffer.from('a/#'),
  Buffer.from([0x61, 0x2f, 0x00]),
  // "a/" and a real U+FFFD, then "a/" and a byte that is not UTF-8: both decode to "a/\ufffd".
  Buffer.from([0x61, 0x2f, 0xef, 0xbf, 0xbd]),
  Buffer.from([0x61, 0x2f, 0xff]),
  Buffer.from([0x61, 0x2f, 0xc3, 0xa9]),
  Buffer.from([0x61, 0x2f, 0xc3, 0x28]),
  Buffer.from('x'.repeat(200)),
  Buffer.from(`${'x'.repeat(199)}+`),
  Buffer.from('x'.repeat(128)),
  Buffer.from(`${'x'.repeat(127)}#`),
];

/** A QoS 1 PUBLISH (3.1.1) with these topic bytes, packet id 1 and a one-byte payload. */
function publishBytes(topic: Buffer): Buffer {
  const remainingLength = 2 + topic.length + 2 + 1;
  const lengthField = remainingLength < 128 ? [remainingLength] : [(remainingLength % 128) | 0x80, Math.floor(remainingLength / 128)];
  return Buffer.concat([Buffer.from([0x32, ...lengthField, topic.length >> 8, topic.length & 0xff]), topic, Buffer.from([0x00, 0x01, 0x7a])]);
}

function outcome(decoder: PacketDecoder, bytes: Buffer): string {
  const result = decoder.decode(bytes);
  return result.kind === 'packet' && result.packet.cmd === 'publish' ? `topic ${JSON.stringify(result.packet.topic)}` : result.kind;
}

describe('the last-topic memo', () => {
  it('decides every PUBLISH of a connection as a fresh decoder does', () => {
    const seed = announceSeed('mqtt topic memo', testSeed);
    fc.assert(
      fc.property(fc.array(fc.nat(topicBytes.length - 1), { minLength: 1, maxLength: 40 }), (picks) => {
        const decoder = new PacketDecoder();
        for (const pick of picks) {
          const bytes = publishBytes(topicBytes[pick]!);
          expect(outcome(decoder, bytes)).toBe(outcome(new PacketDecoder(), bytes));
        }
      }),
      { seed, numRuns: 300 },
    );
  });

  it('refuses bytes that are not UTF-8 after a real U+FFFD that decodes to the same topic', () => {
    const decoder = new PacketDecoder();
    expect(outcome(decoder, publishBytes(topicBytes[5]!))).toBe('topic "a/\ufffd"');
    expect(outcome(decoder, publishBytes(topicBytes[5]!))).toBe('topic "a/\ufffd"');
    expect(outcome(decoder, publishBytes(topicBytes[6]!))).toBe('malformed');
  });
});
