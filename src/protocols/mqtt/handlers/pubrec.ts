/**
 * PUBREC from a client [MQTT-3.5]: an outbound QoS 2 delivery was received.
 * The core records the PUBREL obligation and then calls link.sendPubrel.
 */
import type { ClientPacketOf } from '../client-packet-rules.js';
import type { MqttConnection } from '../connection.js';

export function handlePubrec(connection: MqttConnection, packet: ClientPacketOf<'pubrec'>): void {
  connection.session.pubrec(packet.messageId);
}
