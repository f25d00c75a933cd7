/**
 * Properties of the MQTT framer and codec:
 * - any stream of client packets, cut into chunks anywhere (down to one byte
 *   at a time), frames back into exactly those packets and decodes to them;
 * - random bytes never throw out of the framer or decoder, never yield a
 *   packet over packetBytesMax, and never yield bytes that were not sent;
 * - PUBLISH and SUBACK as Cairn encodes them decode back, by mqtt-packet's own
 *   parser, to the same fields.
 * The seed is printed; rerun with CAIRN_TEST_SEED=<seed> to replay a failure.
 */
import fc from 'fast-check';
import { generate, type Packet } from 'mqtt-packet';
import { describe, expect, it } from 'vitest';
import { encodePublish, encodeSuback, PacketDecoder } from '../../src/protocols/mqtt/codec.js';
import { PacketFramer } from '../../src/protocols/mqtt/framer.js';
import { decodeReference, packetId, qos, topicName } from '../support/mqtt-arbitraries.js';
import { announceSeed } from '../support/kit.js';

const seed = announceSeed('mqtt-codec properties');
const parameters = { seed, numRuns: 200 };

const payload = fc.uint8Array({ maxLength: 600 }).map((bytes) => Buffer.from(bytes));

const clientPacket: fc.Arbitrary<Packet> = fc.oneof(
  fc.record({ topic: topicName, payload, qos, id: packetId, retain: fc.boolean(), dup: fc.boolean() }).map(({ topic, payload: body, qos: q, id, retain, dup }) =>
    q === 0
      ? ({ cmd: 'publish', topic, payload: body, qos: 0, retain, dup: false } as const)
      : ({ cmd: 'publish', topic, payload: body, qos: q, messageId: id, retain, dup } as const),
  ),
  fc.record({ cmd: fc.constantFrom('puback', 'pubrec', 'pubrel', 'pubcomp'), messageId: packetId }).map((packet) => packet as Packet),
  fc.record({ messageId: packetId, subscriptions: fc.array(fc.record({ topic: topicName, qos }), { minLength: 1, maxLength: 4 }) }).map((packet) => ({ cmd: 'subscribe', ...packet }) as const),
  fc.record({ messageId: packetId, unsubscriptions: fc.array(topicName, { minLength: 1, maxLength: 4 }) }).map((packet) => ({ cmd: 'unsubscribe', ...packet }) as const),
  fc.constant({ cmd: 'pingreq' } as const),
  fc.constant({ cmd: 'disconnect' } as const),
);

/** Cut `bytes` at the given (sorted, deduplicated) offsets. */
function cut(bytes: Buffer, offsets: number[]): Buffer[] {
  const points = [...new Set(offsets.map((offset) => offset % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let start = 0;
  for (const point of [...points, bytes.length]) {
    if (point > start) chunks.push(bytes.subarray(start, point));
    start = Math.max(start, point);
  }
  return chunks;
}

function frameAll(framer: PacketFramer, chunks: Buffer[]): { packets: Buffer[]; error: string | undefined } {
  const packets: Buffer[] = [];
  for (const chunk of chunks) {
    framer.push(chunk);
    for (;;) {
      const result = framer.next();
      if (result.kind === 'need-more') break;
      if (result.kind !== 'packet') return { packets, error: result.kind };
      packets.push(result.bytes);
    }
  }
  return { packets, error: undefined };
}

function normalized(packet: Packet): unknown {
  // mqtt-packet fills in defaults (length, empty properties) on decode: compare the fields that travel.
  const { length: _length, ...rest } = packet as Packet & { length?: number };
  return JSON.parse(JSON.stringify(rest)) as unknown;
}

describe('framer and decoder', () => {
  it('frame and decode any packet stream, however it is chunked', () => {
    fc.assert(
      fc.property(fc.array(clientPacket, { minLength: 1, maxLength: 12 }), fc.array(fc.nat(), { maxLength: 30 }), (packets, offsets) => {
        const encoded = packets.map((packet) => generate(packet, { protocolVersion: 4 }));
        const stream = Buffer.concat(encoded);
        const { packets: framed, error } = frameAll(new PacketFramer(4096), cut(stream, offsets));
        expect(error).toBeUndefined();
        expect(framed).toEqual(encoded);
        const decoder = new PacketDecoder();
        const decoded = framed.map((bytes) => {
          const result = decoder.decode(bytes);
          if (result.kind !== 'packet') throw new Error(`decode failed: ${result.reason}`);
          return normalized(result.packet);
        });
        expect(decoded).toEqual(packets.map((packet) => normalized(decodeReference(generate(packet, { protocolVersion: 4 })))));
      }),
      parameters,
    );
  });

  it('frame a stream fed one byte at a time', () => {
    fc.assert(
      fc.property(fc.array(clientPacket, { minLength: 1, maxLength: 5 }), (packets) => {
        const encoded = packets.map((packet) => generate(packet, { protocolVersion: 4 }));
        const stream = Buffer.concat(encoded);
        const bytes = [...stream].map((byte) => Buffer.from([byte]));
        const { packets: framed, error } = frameAll(new PacketFramer(4096), bytes);
        expect(error).toBeUndefined();
        expect(framed).toEqual(encoded);
      }),
      { ...parameters, numRuns: 50 },
    );
  });

  it('survive random bytes: no throw, no oversized packet, nothing that was not sent', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.array(fc.nat(), { maxLength: 10 }), (random, offsets) => {
        const stream = Buffer.from(random);
        const packetBytesMax = 64;
        const { packets } = frameAll(new PacketFramer(packetBytesMax), cut(stream, offsets));
        expect(Buffer.concat(packets)).toEqual(stream.subarray(0, Buffer.concat(packets).length));
        const decoder = new PacketDecoder();
        for (const bytes of packets) {
          expect(bytes.length).toBeLessThanOrEqual(packetBytesMax);
          const result = decoder.decode(bytes);
          expect(['packet', 'malformed']).toContain(result.kind);
        }
      }),
      { ...parameters, numRuns: 500 },
    );
  });
});

describe('encoders', () => {
  it('encodePublish round-trips through mqtt-packet', () => {
    fc.assert(
      fc.property(topicName, payload, qos, packetId, fc.boolean(), fc.boolean(), (topic, body, q, id, retain, dup) => {
        const publish = q === 0 ? { topic, payload: body, qos: q, retain, dup } : { topic, payload: body, qos: q, retain, dup, packetId: id };
        const decoded = decodeReference(encodePublish(publish));
        expect(decoded).toMatchObject({ cmd: 'publish', topic, qos: q, retain, dup, payload: body });
        if (q > 0) expect(decoded).toMatchObject({ messageId: id });
      }),
      parameters,
    );
  });

  // Consecutive PUBLISHes share their topic's bytes when the topic is the same (codec.ts topicBytesOf): a few topics, often repeated.
  it('encodePublish round-trips a sequence of publishes whose topics repeat and change', () => {
    fc.assert(
      fc.property(fc.array(topicName, { minLength: 1, maxLength: 3 }), fc.array(fc.tuple(fc.nat(), payload), { minLength: 1, maxLength: 12 }), (topics, sends) => {
        for (const [pick, body] of sends) {
          const topic = topics[pick % topics.length]!;
          expect(decodeReference(encodePublish({ topic, payload: body, qos: 0, retain: false, dup: false }))).toMatchObject({ cmd: 'publish', topic, payload: body });
        }
      }),
      parameters,
    );
  });

  it('encodeSuback round-trips through mqtt-packet', () => {
    fc.assert(
      fc.property(packetId, fc.array(fc.constantFrom(0, 1, 2, 0x80), { minLength: 1, maxLength: 20 }), (id, granted) => {
        expect(decodeReference(encodeSuback(id, granted))).toMatchObject({ cmd: 'suback', messageId: id, granted });
      }),
      parameters,
    );
  });
});
