/**
 * SUBSCRIBE [MQTT-3.8]. Each filter is validated here; an invalid one, or one
 * the topic ACL refuses, is answered with a failure in its SUBACK slot
 * [MQTT-3.9.3-1] (0x80 in 3.1.1; in MQTT 5 0x8F Topic Filter invalid or 0x87
 * Not authorized) and never reaches the core; so is a malformed shared
 * subscription (`$share//t`, `$share/g+/t`, `$share/g`) [MQTT-4.8.2-1] [MQTT-4.8.2-2].
 * MQTT 5 options (No Local, Retain As Published, Retain Handling) and the
 * packet's Subscription Identifier go with each subscription to the core
 * (core/subscription-delivery.ts says what they do); No Local on a shared
 * subscription is a protocol error [MQTT-3.8.3-4], and an identifier of 0 was
 * refused with the packet (v5-property-rules.ts).
 * SUBACK goes out once the subscriptions are durable, and only then are the
 * retained messages matching the granted filters sent [MQTT-3.3.1-6] (as
 * their Retain Handling says), so they follow the SUBACK on the wire.
 */
import { assert } from '../../../assert.js';
import type { MqttSubscribeRequest, MqttSubscriptionOptions } from '../../../core/api.js';
import { isSharedFilter, sharedFilterProblem } from '../../../core/shared-subscription.js';
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
  const identifier = packet.properties?.subscriptionIdentifier;
  const requests: MqttSubscribeRequest[] = [];
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
      if (subscription.nl === true && isSharedFilter(subscription.topic)) {
        throw new MqttProtocolError('No Local on a shared subscription [MQTT-3.8.3-4]', 'protocol-violation', 'subscribe', ReasonCode.protocolError);
      }
      slots.push({ request: requests.length });
      requests.push({ filter: subscription.topic, qos: subscription.qos, options: optionsOf(subscription, identifier) });
    }
  }
  const session = connection.session;
  const result = requests.length > 0 ? session.subscribe(requests) : { granted: [], durable: undefined, retainedFilters: [] };
  assert(result.granted.length === requests.length, 'core granted a different number of subscriptions than requested');
  const granted = slots.map((slot) => ('failure' in slot ? slot.failure : (result.granted[slot.request] ?? subackFailure)));
  const retainedFilters = result.retainedFilters;
  connection.whenDurable(result.durable, 'SUBSCRIBE', () => {
    connection.write(connection.encoder.suback(packetId, granted));
    if (retainedFilters.length > 0) session.sendRetained(retainedFilters);
  });
}

type Subscription = ClientPacketOf<'subscribe'>['subscriptions'][number];

/** A v5 subscription's options as the core takes them; mqtt-packet leaves them out of a 3.1.1 one (the defaults). */
function optionsOf(subscription: Subscription, identifier: number | undefined): MqttSubscriptionOptions | undefined {
  if (subscription.rh === undefined && identifier === undefined) return undefined;
  return {
    noLocal: subscription.nl === true,
    retainAsPublished: subscription.rap === true,
    retainHandling: (subscription.rh ?? 0) as 0 | 1 | 2,
    ...(identifier !== undefined ? { identifier } : {}),
  };
}
