/**
 * PUBREL from a client [MQTT-3.6]: an inbound QoS 2 message is released. The
 * core forgets the packet id; PUBCOMP follows once that is durable
 * [MQTT-4.3.3-2]. A PUBREL for an unknown id is still answered with PUBCOMP,
 * so a client retrying after our restart finishes its flow; an MQTT 5 client
 * hears 0x92 Packet Identifier not found in it [MQTT-3.7.2.1].
 */
import type { ClientPacketOf } from '../client-packet-rules.js';
import type { MqttConnection } from '../connection.js';
import { ReasonCode } from '../reason-codes.js';

export function handlePubrel(connection: MqttConnection, packet: ClientPacketOf<'pubrel'>): void {
  const packetId = packet.messageId;
  const known = connection.session.awaitsRelease(packetId);
  const durable = connection.session.pubrel(packetId);
  connection.whenDurable(durable, 'PUBREL', () => {
    connection.endInboundPublish(packetId);
    connection.write(connection.encoder.pubcomp(packetId, known ? ReasonCode.success : ReasonCode.packetIdentifierNotFound));
  });
}
