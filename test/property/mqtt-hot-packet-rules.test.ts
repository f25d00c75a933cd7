/**
 * checkHotPacket, the packet rules for what decodeHotPacket decodes (a PUBLISH, a 2-byte PUBACK), answers exactly
 * as checkClientPacket does for the same packet: the same accepted packet or the same malformed reason and code,
 * at level 4 and 5, for packets that break the rules on purpose (packet id 0, DUP on QoS 0, wildcards, U+0000 or
 * bad UTF-8 in the topic, an empty topic, a subscription identifier or a topic alias 0 in a v5 PUBLISH) as well
 * as for well-formed ones. The seed is printed; rerun with CAIRN_TEST_SEED=<seed> to replay a failure.
 */
import fc from 'fast-check';
import { generate } from 'mqtt-packet';
import { describe, expect, it } from 'vitest';
import { checkClientPacket, checkHotPacket } from '../../src/protocols/mqtt/client-packet-rules.js';
import { decodeHotPacket } from '../../src/protocols/mqtt/codec.js';
import { readFixedHeader } from '../../src/protocols/mqtt/framer.js';
import { packetId, qos, topicName } from '../support/mqtt-arbitraries.js';
import { announceSeed } from '../support/kit.js';

const seed = announceSeed('mqtt-hot-packet-rules properties');
const parameters = { seed, numRuns: 500 };

const topic = fc.oneof(topicName, fc.constantFrom('', 'a/+', '#', 'a\u0000b', 'caf\u00e9', 'x/\ufffd'));
const publishProperties = fc.record(
  {
    payloadFormatIndicator: fc.boolean(),
    topicAlias: fc.integer({ min: 0, max: 3 }),
    subscriptionIdentifier: fc.integer({ min: 1, max: 9 }),
    contentType: fc.constantFrom('text', 'a\u0000b'),
    userProperties: fc.constant({ k: 'v' }),
  },
  { requiredKeys: [] },
);

const publish = fc.record({ protocolVersion: fc.constantFrom<4 | 5>(4, 5), topic, qos, messageId: packetId, retain: fc.boolean(), dup: fc.boolean(), properties: publishProperties, zeroId: fc.boolean(), badUtf8: fc.boolean() })
  .map(({ protocolVersion, properties, zeroId, badUtf8, ...packet }) => {
    const bytes = generate({ cmd: 'publish', payload: Buffer.from('p'), ...packet, dup: false, ...(protocolVersion === 5 ? { properties } : {}) }, { protocolVersion });
    // Flags and ids mqtt-packet would not write, set in the bytes: DUP on any QoS, id 0, a lone continuation byte in the topic.
    if (packet.dup) bytes[0] = bytes[0]! | 0x08;
    const header = readFixedHeader(bytes, 0);
    if (header.kind !== 'header') throw new Error('mqtt-packet wrote a PUBLISH without a whole fixed header');
    const topicStart = header.headerBytes + 2;
    const topicEnd = topicStart + bytes.readUInt16BE(topicStart - 2);
    if (zeroId && packet.qos > 0) bytes.writeUInt16BE(0, topicEnd);
    if (badUtf8 && topicEnd > topicStart) bytes[topicStart] = 0x80;
    return { protocolVersion, bytes };
  });

const puback = fc.record({ protocolVersion: fc.constantFrom<4 | 5>(4, 5), id: fc.integer({ min: 0, max: 0xffff }) })
  .map(({ protocolVersion, id }) => ({ protocolVersion, bytes: Buffer.from([0x40, 0x02, id >> 8, id & 0xff]) }));

describe('checkHotPacket', () => {
  it('answers as checkClientPacket for every PUBLISH and PUBACK decodeHotPacket takes', () => {
    let taken = 0;
    fc.assert(
      fc.property(fc.oneof(publish, puback), ({ protocolVersion, bytes }) => {
        const packet = decodeHotPacket(bytes, protocolVersion);
        if (packet === undefined) return;
        taken++;
        expect(checkHotPacket(packet, bytes, protocolVersion)).toEqual(checkClientPacket(packet, bytes, protocolVersion));
      }),
      parameters,
    );
    // Most generated packets are ones the hot decoder takes, or this compares nothing.
    expect(taken).toBeGreaterThan(parameters.numRuns / 2);
  });
});
