/**
 * The MQTT 3.1.1 codec: one whole packet's bytes ↔ a packet object.
 *
 * Decoding uses mqtt-packet's parser, configured for protocol level 4 and fed
 * exactly one packet at a time by the framer (framer.ts), so it never buffers
 * a partial packet itself and the size limit is enforced before it sees any
 * bytes. Every decoded packet then passes the 3.1.1 rules mqtt-packet leaves
 * to servers (client-packet-rules.ts), so what `decode` returns as a packet
 * is one the handlers may trust; anything else is a malformed result.
 *
 * Encoding: PUBLISH and SUBACK go through mqtt-packet's generate(); the fixed
 * four-byte and two-byte packets are written here directly (their layouts are
 * below), because they are sent once per QoS 1/2 message and need no more.
 *
 *   CONNACK  20 02 <flags: bit 0 session present> <return code>
 *   PUBACK   40 02 <packet id MSB> <LSB>        PUBREC  50 02 <id>
 *   PUBREL   62 02 <id>                          PUBCOMP 70 02 <id>
 *   UNSUBACK B0 02 <id>                          PINGRESP D0 00
 */
// Imported, not the global: in Node 20 the global `Buffer` is a getter, called on every use (issue 18: the PUBACK of every QoS 1 PUBLISH).
import { Buffer } from 'node:buffer';
import { generate, parser as createParser, type Packet, type Parser } from 'mqtt-packet';
import { AssertionError, assert } from '../../assert.js';
import type { MqttOutgoingPublish } from '../../core/api.js';
import { checkClientPacket, checkHotPacket, type DecodeResult, type ProtocolVersion } from './client-packet-rules.js';
import { readFixedHeader } from './framer.js';
import { decodePublishProperties, encodePublishProperties, variableIntegerSize, writeVariableInteger, type PublishPacketProperties } from './publish-properties-codec.js';
import type { IPubackPacket, IPublishPacket } from 'mqtt-packet';
import { PayloadViews } from './payload-views.js';
import { TopicMemo } from './topic-memo.js';

export type { ClientPacket, DecodeResult, ProtocolVersion } from './client-packet-rules.js';

/**
 * Decodes whole packets for one connection. Holds one mqtt-packet parser (it
 * switches to the CONNECT's protocol version after a CONNECT; checkConnectProtocol
 * refuses any version but 4 and 5 before that matters). `protocolVersion`
 * follows the CONNECT too, for the fast decoder and the packet rules.
 */
export class PacketDecoder {
  private readonly parser: Parser = createParser({ protocolVersion: 4 });
  private protocolVersionValue: ProtocolVersion = 4;
  private decoded: Packet | undefined;
  private error: string | undefined;
  /** The last PUBLISH topic, for the fast decoder and the packet rules (topic-memo.ts). */
  private readonly topics = new TopicMemo();
  /** The last PUBLISH payload view of a lent read, for the fast decoder (payload-views.ts). */
  private readonly payloads = new PayloadViews();

  constructor() {
    this.parser.on('packet', (packet: Packet) => {
      assert(this.decoded === undefined, 'mqtt-packet emitted two packets for one frame');
      this.decoded = packet;
    });
    this.parser.on('error', (error: unknown) => {
      this.error ??= error instanceof Error ? error.message : String(error);
    });
  }

  get protocolVersion(): ProtocolVersion {
    return this.protocolVersionValue;
  }

  /**
   * `bytes` must be exactly one packet, as cut by PacketFramer; it may be lent (valid only during
   * the call): a PUBLISH's payload and binary properties are then views of it, to copy if kept.
   */
  decode(bytes: Buffer): DecodeResult {
    const fast = decodeHotPacket(bytes, this.protocolVersionValue, this.topics, this.payloads);
    if (fast !== undefined) {
      const topics = this.topics;
      const result = checkHotPacket(fast, bytes, this.protocolVersionValue, topics.checked);
      if (result.kind === 'packet' && fast.cmd === 'publish') {
        const topic = fast.topic;
        if (topic.length > 0) topics.checked = topic;
      }
      return result;
    }
    this.decoded = undefined;
    this.error = undefined;
    let left: number;
    try {
      // mqtt-packet's packets keep views of its input (a CONNECT's password and will, binary properties) and
      // are used after the read that lent `bytes` (socket-reads.ts): it parses a copy of its own.
      left = this.parser.parse(Buffer.from(bytes));
    } catch (error: unknown) {
      // A throw (not an 'error' event) from the parser on hostile bytes is still the client's bad packet.
      if (error instanceof AssertionError) throw error;
      return { kind: 'malformed', reason: `undecodable packet: ${error instanceof Error ? error.message : String(error)}` };
    }
    const decoded = this.decoded as Packet | undefined;
    const error = this.error as string | undefined;
    if (error !== undefined) return { kind: 'malformed', reason: error };
    if (decoded === undefined || left !== 0) return { kind: 'malformed', reason: 'packet shorter than its remaining length' };
    if (decoded.cmd === 'connect' && decoded.protocolVersion === 5) this.protocolVersionValue = 5;
    return checkClientPacket(decoded, bytes, this.protocolVersionValue);
  }
}

/**
 * PUBLISH and PUBACK, the packets of every QoS 1 message, decoded directly
 * (mqtt-packet's general parser costs several times more per packet). Only
 * well-formed ones are taken: anything unusual returns undefined and goes to
 * mqtt-packet, so errors and their reasons stay exactly its own. The result
 * has the fields mqtt-packet would give; the payload is a view of `bytes`.
 *
 *   PUBLISH  3<dup qos qos retain> <remaining length> <topic length: 2> <topic> [<packet id: 2> if QoS > 0]
 *            [<properties length: 00> if MQTT 5] <payload>
 *   PUBACK   40 02 <packet id: 2>            (MQTT 5: reason code 0 and no properties)
 *
 * A v5 PUBLISH's properties are read by publish-properties-codec.ts, which
 * leaves anything unusual to mqtt-packet as well.
 */
export function decodeHotPacket(
  bytes: Buffer, protocolVersion: ProtocolVersion = 4, topics?: TopicMemo, payloads?: PayloadViews,
): IPublishPacket | IPubackPacket | undefined {
  const firstByte = bytes[0];
  if (firstByte === 0x40 && bytes.length === 4 && bytes[1] === 0x02) {
    // The same object mqtt-packet's parser builds, so the two decoders stay interchangeable; each shape in its own
    // literal, as for PUBLISH below.
    const messageId = uint16At(bytes, 2);
    if (protocolVersion === 5) {
      return { cmd: 'puback', retain: false, qos: 0, dup: false, length: 2, topic: null, payload: null, messageId, reasonCode: 0 } as IPubackPacket;
    }
    return { cmd: 'puback', retain: false, qos: 0, dup: false, length: 2, topic: null, payload: null, messageId } as IPubackPacket;
  }
  if (firstByte === undefined || firstByte >> 4 !== 3) return undefined;
  const qosBits = (firstByte >> 1) & 0x03;
  if (qosBits === 3) return undefined;
  const qos = qosBits as 0 | 1 | 2;
  const header = readFixedHeader(bytes, 0);
  if (header.kind !== 'header' || header.headerBytes + header.remainingLength !== bytes.length) return undefined;
  const topicStart = header.headerBytes + 2;
  if (topicStart > bytes.length) return undefined;
  const topicEnd = topicStart + uint16At(bytes, header.headerBytes);
  const propertiesStart = qos > 0 ? topicEnd + 2 : topicEnd;
  let payloadStart = propertiesStart;
  let properties: PublishPacketProperties | undefined;
  if (protocolVersion === 5) {
    const decoded = decodePublishProperties(bytes, propertiesStart);
    if (decoded === undefined) return undefined;
    ({ properties, end: payloadStart } = decoded);
  }
  if (payloadStart > bytes.length) return undefined;
  const retain = (firstByte & 0x01) !== 0;
  const dup = (firstByte & 0x08) !== 0;
  const topic = topics === undefined ? bytes.toString('utf8', topicStart, topicEnd) : topics.topicOf(bytes, topicStart, topicEnd);
  const payload = payloads === undefined ? bytes.subarray(payloadStart) : payloads.of(bytes, payloadStart);
  // Each shape in its own literal (messageId for QoS 1/2, properties for a v5 one), never a property added after:
  // an added property's shape is a V8 map transition, held only by live packets, so a full GC with none alive
  // dropped it and the optimised code of every function that had seen it (decode, dispatch, the packet checks)
  // was thrown away and recompiled.
  const length = header.remainingLength;
  if (qos > 0) {
    const messageId = uint16At(bytes, topicEnd);
    return properties === undefined
      ? { cmd: 'publish', retain, qos, dup, length, topic, payload, messageId }
      : { cmd: 'publish', retain, qos, dup, length, topic, payload, messageId, properties };
  }
  return properties === undefined
    ? { cmd: 'publish', retain, qos, dup, length, topic, payload }
    : { cmd: 'publish', retain, qos, dup, length, topic, payload, properties };
}

/** The big-endian 16-bit integer at `at`, which the caller checked is inside `bytes` (readUInt16BE checks again, out of line). */
function uint16At(bytes: Buffer, at: number): number {
  return (bytes[at]! << 8) | bytes[at + 1]!;
}

/**
 * The protocol name and level of a CONNECT, read before the full decode:
 * mqtt-packet refuses levels it does not know, but a 3.1.1 server must answer
 * an unknown level with CONNACK 1 rather than just closing [MQTT-3.1.2-2].
 * Returns undefined when `bytes` is not a CONNECT or is too short.
 */
export function peekConnectProtocol(bytes: Buffer): { name: string; level: number } | undefined {
  const header = readFixedHeader(bytes, 0);
  if (bytes[0] !== 0x10 || header.kind !== 'header' || bytes.length < header.headerBytes + 2) return undefined;
  const nameStart = header.headerBytes + 2;
  const nameEnd = nameStart + bytes.readUInt16BE(header.headerBytes);
  const level = bytes[nameEnd];
  if (level === undefined) return undefined;
  return { name: bytes.toString('utf8', nameStart, nameEnd), level };
}

// ─────────────────────────── encoding ───────────────────────────

export const ConnackReturnCode = {
  accepted: 0,
  unacceptableProtocolVersion: 1,
  identifierRejected: 2,
  serverUnavailable: 3,
  badUserNameOrPassword: 4,
  notAuthorized: 5,
} as const;
export type ConnackReturnCode = (typeof ConnackReturnCode)[keyof typeof ConnackReturnCode];

export function encodeConnack(returnCode: ConnackReturnCode, sessionPresent: boolean): Buffer {
  // Session present must be 0 whenever the return code is not 0 [MQTT-3.2.2-4].
  return Buffer.from([0x20, 0x02, returnCode === 0 && sessionPresent ? 1 : 0, returnCode]);
}

function encodeWithPacketId(firstByte: number, packetId: number): Buffer {
  // Once per acknowledgement: the message is only built when the invariant breaks (a template argument is built every call).
  if (!(Number.isInteger(packetId) && packetId >= 1 && packetId <= 0xffff)) throw new AssertionError(`packet id out of range: ${packetId}`);
  const bytes = Buffer.allocUnsafe(4);
  bytes[0] = firstByte;
  bytes[1] = 0x02;
  // Its range is checked above: written inline, not through writeUInt16BE (which checks it again, out of line).
  bytes[2] = packetId >> 8;
  bytes[3] = packetId & 0xff;
  return bytes;
}

export const encodePuback = (packetId: number): Buffer => encodeWithPacketId(0x40, packetId);
export const encodePubrec = (packetId: number): Buffer => encodeWithPacketId(0x50, packetId);
/** PUBREL's fixed header flags are 0010 [MQTT-3.6.1-1]. */
export const encodePubrel = (packetId: number): Buffer => encodeWithPacketId(0x62, packetId);
export const encodePubcomp = (packetId: number): Buffer => encodeWithPacketId(0x70, packetId);
export const encodeUnsuback = (packetId: number): Buffer => encodeWithPacketId(0xb0, packetId);
export const pingrespBytes: Buffer = Buffer.from([0xd0, 0x00]);

export function encodeSuback(packetId: number, granted: ReadonlyArray<number>): Buffer {
  return generate({ cmd: 'suback', messageId: packetId, granted: [...granted] }, { protocolVersion: 4 });
}

/**
 * Where a packet is written in place: `reserve(length)` returns the offset in `buffer` (read after
 * the call) of `length` bytes that are the caller's to fill. OutgoingPackets is one: a connection's
 * deliveries are written straight into the buffer its socket is then given (outgoing-packets.ts).
 */
export interface PacketSpace {
  reserve(length: number): number;
  readonly buffer: Buffer;
}

/**
 * Writes a PUBLISH into `space` unless it is longer than `bytesMax` (then nothing is written); returns
 * its length either way. A v5 PUBLISH always has its properties length (0 when there are none);
 * `properties` only count at level 5. Written here (layout at decodeHotPacket), properties by
 * publish-properties-codec.ts; a property that writer does not know sends the packet through
 * mqtt-packet's generate(), copied into the space.
 */
export function writePublish(
  space: PacketSpace, publish: MqttOutgoingPublish, protocolVersion: ProtocolVersion = 4, properties?: IPublishPacket['properties'], bytesMax = Infinity,
): number {
  assert((publish.qos === 0) === (publish.packetId === undefined), 'a PUBLISH has a packet id exactly when its QoS > 0');
  const propertyBytes = protocolVersion === 5 ? encodePublishProperties(properties) : noPropertyBytes;
  if (propertyBytes === undefined) return copyInto(space, generatePublish(publish, protocolVersion, properties), bytesMax);
  const payload = publish.payload;
  const topic = topicBytesOf(publish.topic);
  const topicLength = topic.length;
  const remaining = 2 + topicLength + (publish.packetId === undefined ? 0 : 2) + propertyBytes.length + payload.byteLength;
  const length = 1 + variableIntegerSize(remaining) + remaining;
  if (length > bytesMax) return length;
  let at = space.reserve(length);
  const out = space.buffer;
  out[at] = 0x30 | (publish.dup ? 0x08 : 0) | (publish.qos << 1) | (publish.retain ? 0x01 : 0);
  at = writeVariableInteger(out, at + 1, remaining);
  out[at] = topicLength >> 8;
  out[at + 1] = topicLength & 0xff;
  at += 2;
  // Byte by byte: a topic is short, and a set() of a few bytes costs more than the loop.
  for (let index = 0; index < topicLength; index++) out[at + index] = topic[index]!;
  at += topicLength;
  if (publish.packetId !== undefined) {
    out[at] = publish.packetId >> 8;
    out[at + 1] = publish.packetId & 0xff;
    at += 2;
  }
  if (propertyBytes.length > 0) out.set(propertyBytes, at);
  out.set(payload, at + propertyBytes.length);
  return length;
}

/** A PUBLISH in a buffer of its own (writePublish into a space that allocates what it is asked for). */
export function encodePublish(publish: MqttOutgoingPublish, protocolVersion: ProtocolVersion = 4, properties?: IPublishPacket['properties']): Buffer {
  const own = new OwnPacketSpace();
  writePublish(own, publish, protocolVersion, properties);
  return own.buffer;
}

class OwnPacketSpace implements PacketSpace {
  buffer: Buffer = noPropertyBytes;

  reserve(length: number): number {
    this.buffer = Buffer.allocUnsafe(length);
    return 0;
  }
}

function generatePublish(publish: MqttOutgoingPublish, protocolVersion: ProtocolVersion, properties: IPublishPacket['properties']): Buffer {
  const payload = Buffer.isBuffer(publish.payload)
    ? publish.payload
    : Buffer.from(publish.payload.buffer, publish.payload.byteOffset, publish.payload.byteLength);
  const packet: IPublishPacket = {
    cmd: 'publish',
    topic: publish.topic,
    payload,
    qos: publish.qos,
    retain: publish.retain,
    dup: publish.dup,
  };
  if (publish.packetId !== undefined) packet.messageId = publish.packetId;
  if (protocolVersion === 5 && properties !== undefined) packet.properties = properties;
  return generate(packet, { protocolVersion });
}

function copyInto(space: PacketSpace, bytes: Buffer, bytesMax: number): number {
  if (bytes.length > bytesMax) return bytes.length;
  const at = space.reserve(bytes.length);
  bytes.copy(space.buffer, at);
  return bytes.length;
}

const noPropertyBytes = Buffer.alloc(0);

/**
 * The UTF-8 bytes of the last PUBLISH topic written, by any connection: a subscriber mostly gets one
 * publisher's topic again, and a fan-out writes one topic for every subscriber. Encoding a string
 * (Buffer.write) crosses into C++ on every call. Never written to: the packets get copies.
 */
let lastTopic = '';
let lastTopicBytes = Buffer.alloc(0);

function topicBytesOf(topic: string): Buffer {
  if (topic !== lastTopic) {
    lastTopicBytes = Buffer.from(topic, 'utf8');
    lastTopic = topic;
  }
  return lastTopicBytes;
}
