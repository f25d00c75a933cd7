/**
 * UNSUBSCRIBE [MQTT-3.10]. UNSUBACK goes out once the removals are durable,
 * even when a filter was not subscribed [MQTT-3.10.4-5]; an invalid filter
 * cannot be subscribed, so it is skipped rather than sent to the core. An
 * MQTT 5 UNSUBACK has a reason code per filter [MQTT-3.11.3]: 0x00, 0x11 No
 * subscription existed, or 0x8F Topic Filter invalid.
 */
import { validateTopicFilter } from '../../../core/topic-filter.js';
import type { ClientPacketOf } from '../client-packet-rules.js';
import type { MqttConnection } from '../connection.js';
import { MqttProtocolError } from '../errors.js';
import { ReasonCode } from '../reason-codes.js';

export function handleUnsubscribe(connection: MqttConnection, packet: ClientPacketOf<'unsubscribe'>): void {
  const packetId = packet.messageId;
  const limit = connection.context.limits.filtersPerPacketMax;
  if (packet.unsubscriptions.length > limit) {
    throw new MqttProtocolError(`UNSUBSCRIBE with ${packet.unsubscriptions.length} filters (filtersPerPacketMax is ${limit})`, 'protocol-violation', 'unsubscribe');
  }
  const session = connection.session;
  const slots = packet.unsubscriptions.map((filter) =>
    validateTopicFilter(filter) !== undefined ? ReasonCode.topicFilterInvalid : session.subscribed(filter) ? ReasonCode.success : ReasonCode.noSubscriptionExisted,
  );
  const filters = packet.unsubscriptions.filter((_, index) => slots[index] !== ReasonCode.topicFilterInvalid);
  const durable = filters.length > 0 ? session.unsubscribe(filters) : undefined;
  connection.whenDurable(durable, 'UNSUBSCRIBE', () => connection.write(connection.encoder.unsuback(packetId, slots)));
}
