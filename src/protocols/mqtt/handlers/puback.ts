/** PUBACK from a client [MQTT-3.4]: an outbound QoS 1 delivery is done. */
import type { IPubackPacket } from 'mqtt-packet';
import type { MqttConnection } from '../connection.js';

export function handlePuback(connection: MqttConnection, packet: IPubackPacket): void {
  if (packet.messageId !== undefined) connection.session.puback(packet.messageId);
}
