/** PUBCOMP from a client [MQTT-3.7]: an outbound QoS 2 delivery is finished. */
import type { ClientPacketOf } from '../client-packet-rules.js';
import type { MqttConnection } from '../connection.js';

export function handlePubcomp(connection: MqttConnection, packet: ClientPacketOf<'pubcomp'>): void {
  connection.session.pubcomp(packet.messageId);
}
