/**
 * DISCONNECT [MQTT-3.14]: the client is leaving on purpose. The will is
 * discarded without being published [MQTT-3.14.4-3], unless an MQTT 5 client
 * says "Disconnect with Will Message" (0x04) [MQTT-3.14.2.1]; the session is
 * detached (a clean one is discarded; an MQTT 5 one starts its expiry, which
 * the DISCONNECT may change), and the connection closed.
 */
import type { ClientPacketOf } from '../client-packet-rules.js';
import type { MqttConnection } from '../connection.js';
import { ReasonCode } from '../reason-codes.js';

export function handleDisconnect(connection: MqttConnection, packet: ClientPacketOf<'disconnect'>): void {
  connection.disconnect(packet.reasonCode === ReasonCode.disconnectWithWill, packet.properties?.sessionExpiryInterval);
}
