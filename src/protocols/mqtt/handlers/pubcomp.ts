/** PUBCOMP from a client [MQTT-3.7]: an outbound QoS 2 delivery is finished. */
import type { IPubcompPacket } from 'mqtt-packet';
import type { MqttConnection } from '../connection.js';

export function handlePubcomp(connection: MqttConnection, packet: IPubcompPacket): void {
  if (packet.messageId !== undefined) connection.session.pubcomp(packet.messageId);
}
