/**
 * SUBSCRIBE [MQTT-3.8]. Each filter is validated here; an invalid one, or one
 * the topic ACL refuses, is answered with 0x80 (failure) in its SUBACK slot
 * [MQTT-3.9.3-1] and never reaches the core.
 * SUBACK goes out once the subscriptions are durable, and only then are the
 * retained messages matching the granted filters sent [MQTT-3.3.1-6], so they
 * follow the SUBACK on the wire.
 */
import { assert } from '../../../assert.js';
import type { Qos } from '../../../core/api.js';
import { validateTopicFilter } from '../../../core/topic-filter.js';
import { encodeSuback } from '../codec.js';
import type { ClientPacketOf } from '../client-packet-rules.js';
import type { MqttConnection } from '../connection.js';
import { MqttProtocolError } from '../errors.js';

const subackFailure = 0x80;

export function handleSubscribe(connection: MqttConnection, packet: ClientPacketOf<'subscribe'>): void {
  const packetId = packet.messageId;
  const limit = connection.context.limits.filtersPerPacketMax;
  if (packet.subscriptions.length > limit) {
    throw new MqttProtocolError(`SUBSCRIBE with ${packet.subscriptions.length} filters (filtersPerPacketMax is ${limit})`, 'protocol-violation', 'subscribe');
  }
  const requests: Array<{ filter: string; qos: Qos }> = [];
  const slots: Array<number | undefined> = [];
  for (const subscription of packet.subscriptions) {
    const problem = validateTopicFilter(subscription.topic);
    if (problem !== undefined) {
      connection.logger.debug({ filter: subscription.topic.slice(0, 128), problem }, 'MQTT SUBSCRIBE with an invalid filter');
      slots.push(undefined);
    } else if (!connection.topicAccess.maySubscribe(subscription.topic)) {
      connection.logger.debug({ filter: subscription.topic.slice(0, 128) }, 'MQTT SUBSCRIBE refused by the ACL');
      slots.push(undefined);
    } else {
      slots.push(requests.length);
      requests.push({ filter: subscription.topic, qos: subscription.qos });
    }
  }
  const session = connection.session;
  const result = requests.length > 0 ? session.subscribe(requests) : { granted: [], durable: undefined };
  assert(result.granted.length === requests.length, 'core granted a different number of subscriptions than requested');
  const granted = slots.map((slot) => (slot === undefined ? subackFailure : (result.granted[slot] ?? subackFailure)));
  const grantedFilters = requests.filter((_, index) => result.granted[index] !== subackFailure).map((request) => request.filter);
  connection.whenDurable(result.durable, 'SUBSCRIBE', () => {
    connection.write(encodeSuback(packetId, granted));
    if (grantedFilters.length > 0) session.sendRetained(grantedFilters);
  });
}
