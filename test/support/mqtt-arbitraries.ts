/**
 * What the MQTT codec property tests share: packet field arbitraries and
 * mqtt-packet's parser as the reference decoder, at either protocol level.
 */
import fc from 'fast-check';
import { parser as createParser, type Packet } from 'mqtt-packet';

export const packetId = fc.integer({ min: 1, max: 0xffff });
export const qos = fc.constantFrom<0 | 1 | 2>(0, 1, 2);
const level = fc.stringMatching(/^[a-z0-9]{0,6}$/);
export const topicName = fc.array(level, { minLength: 1, maxLength: 4 }).map((levels) => levels.join('/')).filter((topic) => topic.length > 0);

/** The one packet `bytes` holds, as mqtt-packet parses it; throws on its error or on any other count. */
export function decodeReference(bytes: Buffer, protocolVersion: 4 | 5 = 4): Packet {
  const parser = createParser({ protocolVersion });
  const packets: Packet[] = [];
  parser.on('packet', (packet: Packet) => packets.push(packet));
  parser.on('error', (error: Error) => {
    throw error;
  });
  parser.parse(bytes);
  if (packets.length !== 1 || packets[0] === undefined) throw new Error(`expected one packet, got ${packets.length}`);
  return packets[0];
}
