/**
 * UNSUBSCRIBE [MQTT-3.10]. UNSUBACK goes out once the removals are durable,
 * even when a filter was not subscribed [MQTT-3.10.4-5]; an invalid filter
 * cannot be subscribed, so it is skipped rather than sent to the core.
 */
import { validateTopicFilter } from '../../../core/topic-filter.js';
import { encodeUnsuback } from '../codec.js';
import type { ClientPacketOf } from '../client-packet-rules.js';
import type { MqttConnection } from '../connection.js';
import { MqttProtocolError } from '../errors.js';

export function handleUnsubscribe(connection: MqttConnection, packet: ClientPacketOf<'unsubscribe'>): void {
  const packetId = packet.messageId;
  const limit = connection.context.limits.filtersPerPacketMax;
  if (packet.unsubscriptions.length > limit) {
    throw new MqttProtocolError(`UNSUBSCRIBE with ${packet.unsubscriptions.length} filters (filtersPerPacketMax is ${limit})`, 'protocol-violation', 'unsubscribe');
  }
  const filters = packet.unsubscriptions.filter((filter) => validateTopicFilter(filter) === undefined);
  const durable = filters.length > 0 ? connection.session.unsubscribe(filters) : undefined;
  connection.whenDurable(durable, 'UNSUBSCRIBE', () => connection.write(encodeUnsuback(packetId)));
}
