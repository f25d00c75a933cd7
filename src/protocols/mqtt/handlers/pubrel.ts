/**
 * PUBREL from a client [MQTT-3.6]: an inbound QoS 2 message is released. The
 * core forgets the packet id; PUBCOMP follows once that is durable
 * [MQTT-4.3.3-2]. A PUBREL for an unknown id is still answered with PUBCOMP,
 * so a client retrying after our restart finishes its flow.
 */
import type { ClientPacketOf } from '../client-packet-rules.js';
import type { MqttConnection } from '../connection.js';

export function handlePubrel(connection: MqttConnection, packet: ClientPacketOf<'pubrel'>): void {
  const packetId = packet.messageId;
  const durable = connection.session.pubrel(packetId);
  connection.whenDurable(durable, 'PUBREL', () => {
    connection.endInboundPublish(packetId);
    connection.write(connection.encoder.pubcomp(packetId));
  });
}
