/**
 * MQTT 5 subscription options at run time: what they change on each PUBLISH
 * a session is sent (Retain Handling acts at SUBSCRIBE, in mqtt-core.ts).
 *
 * Cairn sends ONE copy of a message to a session however many of its
 * subscriptions match, with the highest of their QoS [MQTT-3.3.4-2]; that
 * copy carries the Subscription Identifiers of every matching subscription
 * that has one [MQTT-3.3.4-4], and keeps the RETAIN flag it was published
 * with when any of them is Retain As Published [MQTT-3.3.1-13] (else the flag
 * is cleared [MQTT-3.3.1-12]). A retained message sent because of a new
 * subscription always has RETAIN set [MQTT-3.3.1-9]. A publisher's own No
 * Local subscriptions neither route its messages to it (SubscriptionIndex.match)
 * nor lend them their identifiers.
 *
 * Both are worked out when the message is sent, from the subscriptions the
 * session has then (a queued message whose subscription was removed since
 * goes out without its identifier): nothing per message is stored, and a
 * session whose subscriptions have no options pays nothing. A shared
 * subscription's delivery carries the options of the member's subscription to
 * that group only.
 */
import { isSharedFilter } from '../projections/shared-groups.js';
import type { SessionState, StoredMessage } from '../projections/state.js';
import { topicMatchesFilter } from './topic-filter.js';

/** What a session's subscriptions make of one outgoing PUBLISH. */
export interface DeliveryFlags {
  readonly retain: boolean;
  readonly subscriptionIdentifiers?: readonly number[] | undefined;
}

const forwarded: DeliveryFlags = { retain: false };
const retainedOnSubscribe: DeliveryFlags = { retain: true };

/**
 * RETAIN flag and identifiers of a message sent to a session for its own (not shared)
 * subscriptions. `onSubscribe`: a retained message sent because of a new subscription.
 */
export function deliveryFlagsOf(state: SessionState, message: StoredMessage, topic: string, onSubscribe: boolean): DeliveryFlags {
  if (state.subscriptionOptions.size === 0) return onSubscribe ? retainedOnSubscribe : forwarded;
  let retain = onSubscribe;
  const identifiers: number[] = [];
  const ownMessage = !onSubscribe && message.exchange === undefined && message.from === state.clientId;
  for (const [filter, options] of state.subscriptionOptions) {
    if (isSharedFilter(filter) || (ownMessage && options.noLocal === true) || !topicMatchesFilter(topic, filter)) continue;
    if (options.retainAsPublished === true && message.publishedRetain === true) retain = true;
    if (options.identifier !== undefined) identifiers.push(options.identifier);
  }
  return identifiers.length === 0 ? (retain ? retainedOnSubscribe : forwarded) : { retain, subscriptionIdentifiers: identifiers };
}

/** RETAIN flag and identifier of a message a shared group sends to one of its members. */
export function sharedDeliveryFlagsOf(member: SessionState, group: string, message: StoredMessage): DeliveryFlags {
  const options = member.subscriptionOptions.get(group);
  if (options === undefined) return forwarded;
  const retain = options.retainAsPublished === true && message.publishedRetain === true;
  return options.identifier === undefined ? { retain } : { retain, subscriptionIdentifiers: [options.identifier] };
}
