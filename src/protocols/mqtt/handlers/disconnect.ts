/**
 * DISCONNECT [MQTT-3.14]: the client is leaving on purpose. The will is
 * discarded without being published [MQTT-3.14.4-3], the session detached
 * (a clean one is discarded), and the connection closed.
 */
import type { MqttConnection } from '../connection.js';

export function handleDisconnect(connection: MqttConnection): void {
  connection.disconnect();
}
