/** PINGREQ [MQTT-3.12]: answer PINGRESP [MQTT-3.12.4-1]; receiving it already counted as keep-alive activity. */
import { pingrespBytes } from '../codec.js';
import type { MqttConnection } from '../connection.js';

export function handlePingreq(connection: MqttConnection): void {
  connection.write(pingrespBytes);
}
