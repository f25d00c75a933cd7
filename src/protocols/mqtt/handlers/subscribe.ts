/**
 * SUBSCRIBE [MQTT-3.8]. Each filter is validated here; an invalid one, or one
 * the topic ACL refuses, is answered with a failure in its SUBACK slot
 * [MQTT-3.9.3-1] (0x80 in 3.1.1; in MQTT 5 0x8F Topic Filter invalid or 0x87
 * Not authorized) and never reaches the core; so is a malformed shared
 * subscription (`$share//t`, `$share/g+/t`, `$share/g`) [MQTT-4.8.2-1] [MQTT-4.8.2-2]. A subscription identifier is a
 * protocol error while CONNACK says they are not available (0xA1).
 * SUBACK goes out once the subscriptions are durable, and only then are the
 * retained messages matching the granted filters sent [MQTT-3.3.1-6], so they
 * follow the SUBACK on the wire.
 */
import { assert } from '../../../assert.js';
import type { Qos } from '../../../core/api.js';
import { sharedFilterProblem } from '../../../core/shared-subscription.js';
import { validateTopicFilter } from '../../../core/topic-filter.js';
import type { ClientPacketOf } from '../client-packet-rules.js';
import type { MqttConnection } from '../connection.js';
import { MqttProtocolError } from '../errors.js';
import { ReasonCode } from '../reason-codes.js';

const subackFailure = ReasonCode.unspecifiedError;

export function handleSubscribe(connection: MqttConnection, packet: ClientPacketOf<'subscribe'>): void {
  const packetId = packet.messageId;
  const limit = connection.context.limits.filtersPerPacketMax;
  if (packet.subscriptions.length > limit) {
    throw new MqttProtocolError(`SUBSCRIBE with ${packet.subscriptions.length} filters (filtersPerPacketMax is ${limit})`, 'protocol-violation', 'subscribe');
  }
  if (packet.properties?.subscriptionIdentifier !== undefined) {
    throw new MqttProtocolError('SUBSCRIBE with a subscription identifier, which this server does not support', 'protocol-violation', 'subscribe', ReasonCode.subscriptionIdentifiersNotSupported);
  }
  const requests: Array<{ filter: string; qos: Qos }> = [];
  /** Per filter: an index into `requests`, or the failure reason code. */
  const slots: Array<{ request: number } | { failure: number }> = [];
  for (const subscription of packet.subscriptions) {
    const problem = validateTopicFilter(subscription.topic) ?? sharedFilterProblem(subscription.topic);
    if (problem !== undefined) {
      connection.logger.debug({ filter: subscription.topic.slice(0, 128), problem }, 'MQTT SUBSCRIBE with an invalid filter');
      slots.push({ failure: ReasonCode.topicFilterInvalid });
    } else if (!connection.topicAccess.maySubscribe(subscription.topic)) {
      connection.logger.debug({ filter: subscription.topic.slice(0, 128) }, 'MQTT SUBSCRIBE refused by the ACL');
      slots.push({ failure: ReasonCode.notAuthorized });
    } else {
      slots.push({ request: requests.length });
      requests.push({ filter: subscription.topic, qos: subscription.qos });
    }
  }
  const session = connection.session;
  const result = requests.length > 0 ? session.subscribe(requests) : { granted: [], durable: undefined };
  assert(result.granted.length === requests.length, 'core granted a different number of subscriptions than requested');
  const granted = slots.map((slot) => ('failure' in slot ? slot.failure : (result.granted[slot.request] ?? subackFailure)));
  const grantedFilters = requests.filter((_, index) => result.granted[index] !== subackFailure).map((request) => request.filter);
  connection.whenDurable(result.durable, 'SUBSCRIBE', () => {
    connection.write(connection.encoder.suback(packetId, granted));
    if (grantedFilters.length > 0) session.sendRetained(grantedFilters);
  });
}
