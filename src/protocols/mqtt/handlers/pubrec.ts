/**
 * PUBREC from a client [MQTT-3.5]: an outbound QoS 2 delivery was received.
 * The core records the PUBREL obligation and then calls link.sendPubrel.
 */
import type { IPubrecPacket } from 'mqtt-packet';
import type { MqttConnection } from '../connection.js';

export function handlePubrec(connection: MqttConnection, packet: IPubrecPacket): void {
  if (packet.messageId !== undefined) connection.session.pubrec(packet.messageId);
}
