/**
 * MQTT 5 PUBLISH properties between the protocol and the store. The protocol
 * speaks intervals (Message Expiry Interval in seconds, counted from now);
 * a stored message keeps an absolute expiry time, taken from the core's clock
 * when the message is accepted, so the record says when it expires and replay
 * needs no clock. On the way out the remaining interval is sent
 * [MQTT-3.3.2-6], and a message past its time is never delivered [MQTT-3.3.2-5].
 */
import type { MessageProperties } from '../projections/state.js';
import type { MqttPublishProperties } from './api.js';

/** What a message keeps of an incoming PUBLISH's properties, in memory of its own; undefined when it has none. */
export function storedPropertiesOf(incoming: MqttPublishProperties | undefined, now: number): MessageProperties | undefined {
  if (incoming === undefined) return undefined;
  const stored: { -readonly [K in keyof MessageProperties]: MessageProperties[K] } = {};
  if (incoming.payloadFormatIndicator === true) stored.payloadUtf8 = true;
  if (incoming.messageExpiryInterval !== undefined) stored.expiresAt = now + incoming.messageExpiryInterval * 1000;
  if (incoming.contentType !== undefined) stored.contentType = incoming.contentType;
  if (incoming.responseTopic !== undefined) stored.responseTopic = incoming.responseTopic;
  // Copied: a decoded PUBLISH's correlation data may be a view of a socket read that is reused (MqttIncomingPublish).
  if (incoming.correlationData !== undefined) stored.correlationData = new Uint8Array(incoming.correlationData);
  if (incoming.userProperties !== undefined && incoming.userProperties.length > 0) stored.userProperties = incoming.userProperties;
  return Object.keys(stored).length > 0 ? stored : undefined;
}

export function isExpired(stored: MessageProperties | undefined, now: number): boolean {
  return stored?.expiresAt !== undefined && stored.expiresAt <= now;
}

/** The properties a delivery carries: the stored ones, the expiry as what is left of it (whole seconds, rounded up). */
export function outgoingPropertiesOf(stored: MessageProperties | undefined, now: number): MqttPublishProperties | undefined {
  if (stored === undefined) return undefined;
  const outgoing: { -readonly [K in keyof MqttPublishProperties]: MqttPublishProperties[K] } = {};
  if (stored.payloadUtf8) outgoing.payloadFormatIndicator = true;
  if (stored.expiresAt !== undefined) outgoing.messageExpiryInterval = Math.max(0, Math.ceil((stored.expiresAt - now) / 1000));
  if (stored.contentType !== undefined) outgoing.contentType = stored.contentType;
  if (stored.responseTopic !== undefined) outgoing.responseTopic = stored.responseTopic;
  if (stored.correlationData !== undefined) outgoing.correlationData = stored.correlationData;
  if (stored.userProperties !== undefined) outgoing.userProperties = stored.userProperties;
  return outgoing;
}
