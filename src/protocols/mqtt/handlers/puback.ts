/** PUBACK from a client [MQTT-3.4]: an outbound QoS 1 delivery is done. */
import type { ClientPacketOf } from '../client-packet-rules.js';
import type { MqttConnection } from '../connection.js';

export function handlePuback(connection: MqttConnection, packet: ClientPacketOf<'puback'>): void {
  connection.session.puback(packet.messageId);
}
