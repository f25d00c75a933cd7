/**
 * The server's packets for one protocol level: handlers say what to answer
 * (an acknowledgement with an MQTT 5 reason code, a SUBACK slot per filter,
 * a DISCONNECT with a reason) and the connection's encoder writes it the way
 * its client speaks. A 3.1.1 client gets the fixed four-byte packets and a
 * SUBACK whose failures are all 0x80; it has no DISCONNECT from the server.
 *
 * A v5 acknowledgement with reason code 0 and no properties is the same four
 * bytes as in 3.1.1 (the reason code may be omitted then [MQTT-3.4.2.1]), so
 * the QoS 1 path costs nothing more in MQTT 5; with another reason code and
 * no properties it is five bytes, also written here. Everything else in v5
 * goes through mqtt-packet's generate().
 */
import { generate, type IConnackPacket, type IPublishPacket } from 'mqtt-packet';
import type { MqttOutgoingPublish } from '../../core/api.js';
import {
  encodeConnack, encodePuback, encodePubcomp, encodePubrec, encodePubrel, encodeSuback, encodeUnsuback, writePublish, type ConnackReturnCode, type PacketSpace,
} from './codec.js';
import type { ProtocolVersion } from './client-packet-rules.js';
import { connackReasonCodeOf, ReasonCode } from './reason-codes.js';

export type ConnackProperties = NonNullable<IConnackPacket['properties']>;
export type PublishProperties = NonNullable<IPublishPacket['properties']>;

export interface PacketEncoder {
  readonly protocolVersion: ProtocolVersion;
  /** An accepted CONNECT. */
  connack(sessionPresent: boolean, properties: ConnackProperties): Buffer;
  /** A refused CONNECT: the 3.1.1 return code, or a v5 reason code when only v5 has one for it. */
  connackRefused(returnCode: Exclude<ConnackReturnCode, 0>, reasonCode: ReasonCode | undefined, reasonString: string): Buffer;
  puback(packetId: number, reasonCode?: ReasonCode): Buffer;
  pubrec(packetId: number, reasonCode?: ReasonCode): Buffer;
  pubrel(packetId: number, reasonCode?: ReasonCode): Buffer;
  pubcomp(packetId: number, reasonCode?: ReasonCode): Buffer;
  /** One slot per filter: the granted QoS or a v5 failure reason code (≥ 0x80). */
  suback(packetId: number, slots: readonly number[]): Buffer;
  /** One slot per filter (v5 only; 3.1.1's UNSUBACK has none). */
  unsuback(packetId: number, slots: readonly number[]): Buffer;
  /** Writes a PUBLISH into `space` unless it is longer than `bytesMax`; returns its length (codec.ts writePublish). */
  writePublish(space: PacketSpace, publish: MqttOutgoingPublish, properties?: PublishProperties, bytesMax?: number): number;
  /** A server DISCONNECT, or undefined when the protocol has none (3.1.1). */
  disconnect(reasonCode: ReasonCode, reasonString?: string): Buffer | undefined;
}

const subackFailure311 = 0x80;

export const encoder311: PacketEncoder = {
  protocolVersion: 4,
  connack: (sessionPresent) => encodeConnack(0, sessionPresent),
  connackRefused: (returnCode) => encodeConnack(returnCode, false),
  puback: (packetId) => encodePuback(packetId),
  pubrec: (packetId) => encodePubrec(packetId),
  pubrel: (packetId) => encodePubrel(packetId),
  pubcomp: (packetId) => encodePubcomp(packetId),
  suback: (packetId, slots) => encodeSuback(packetId, slots.map((slot) => (slot >= subackFailure311 ? subackFailure311 : slot))),
  unsuback: (packetId) => encodeUnsuback(packetId),
  writePublish: (space, publish, _properties, bytesMax) => writePublish(space, publish, 4, undefined, bytesMax),
  disconnect: () => undefined,
};

const v5 = { protocolVersion: 5 } as const;

/** Without properties a reason code is one byte after the packet id [MQTT-3.4.2.1]: no generate() on that path either. */
function acknowledgement(short: (packetId: number) => Buffer) {
  return (packetId: number, reasonCode: ReasonCode = ReasonCode.success): Buffer => {
    const bytes = short(packetId);
    if (reasonCode === ReasonCode.success) return bytes;
    return Buffer.from([bytes[0]!, 0x03, bytes[2]!, bytes[3]!, reasonCode]);
  };
}

export const encoder5: PacketEncoder = {
  protocolVersion: 5,
  connack: (sessionPresent, properties) => generate({ cmd: 'connack', sessionPresent, reasonCode: 0, properties }, v5),
  connackRefused: (returnCode, reasonCode, reasonString) =>
    generate({ cmd: 'connack', sessionPresent: false, reasonCode: reasonCode ?? connackReasonCodeOf(returnCode), properties: { reasonString } }, v5),
  puback: acknowledgement(encodePuback),
  pubrec: acknowledgement(encodePubrec),
  pubrel: acknowledgement(encodePubrel),
  pubcomp: acknowledgement(encodePubcomp),
  suback: (packetId, slots) => generate({ cmd: 'suback', messageId: packetId, granted: [...slots] }, v5),
  unsuback: (packetId, slots) => generate({ cmd: 'unsuback', messageId: packetId, granted: [...slots] } as never, v5),
  writePublish: (space, publish, properties, bytesMax) => writePublish(space, publish, 5, properties, bytesMax),
  disconnect: (reasonCode, reasonString) =>
    generate({ cmd: 'disconnect', reasonCode, ...(reasonString !== undefined ? { properties: { reasonString } } : {}) }, v5),
};

export function encoderFor(protocolVersion: ProtocolVersion): PacketEncoder {
  return protocolVersion === 5 ? encoder5 : encoder311;
}
