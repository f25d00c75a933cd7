/**
 * MQTT 5 PUBLISH properties between mqtt-packet's shape and the core's
 * (MqttPublishProperties): user properties are an object of name → value or
 * values in mqtt-packet, and an ordered list of [name, value] pairs in the
 * core and the log (the spec keeps their order and allows repeats
 * [MQTT-3.3.2-17]). The topic alias is the connection's business and never
 * travels; a will's delay is the session's.
 */
import type { IPublishPacket } from 'mqtt-packet';
import type { MqttPublishProperties } from '../../core/api.js';

type PacketProperties = NonNullable<IPublishPacket['properties']>;
type PacketUserProperties = NonNullable<PacketProperties['userProperties']>;

/** The properties the core keeps of an incoming PUBLISH or will; undefined when there are none. */
export function incomingPropertiesOf(packet: PacketProperties | undefined): MqttPublishProperties | undefined {
  if (packet === undefined) return undefined;
  const properties: { -readonly [K in keyof MqttPublishProperties]: MqttPublishProperties[K] } = {};
  if (packet.payloadFormatIndicator === true) properties.payloadFormatIndicator = true;
  if (packet.messageExpiryInterval !== undefined) properties.messageExpiryInterval = packet.messageExpiryInterval;
  if (packet.contentType !== undefined) properties.contentType = packet.contentType;
  if (packet.responseTopic !== undefined) properties.responseTopic = packet.responseTopic;
  // Copied: the decoded bytes are a view of a socket chunk.
  if (packet.correlationData !== undefined) properties.correlationData = Buffer.from(packet.correlationData);
  if (packet.userProperties !== undefined) properties.userProperties = userPropertyPairs(packet.userProperties);
  return Object.keys(properties).length > 0 ? properties : undefined;
}

function userPropertyPairs(userProperties: PacketUserProperties): Array<readonly [string, string]> {
  const pairs: Array<readonly [string, string]> = [];
  // for-in, not Object.entries: no array of pairs per PUBLISH (mqtt-packet's object has no prototype).
  for (const name in userProperties) {
    const value = userProperties[name];
    if (Array.isArray(value)) for (const one of value) pairs.push([name, String(one)]);
    else pairs.push([name, String(value)]);
  }
  return pairs;
}

/** mqtt-packet's properties for an outgoing PUBLISH; undefined when it has none. */
export function outgoingPacketPropertiesOf(
  properties: MqttPublishProperties | undefined, subscriptionIdentifiers: readonly number[] | undefined,
): PacketProperties | undefined {
  if (properties === undefined && subscriptionIdentifiers === undefined) return undefined;
  const packet: PacketProperties = {};
  // One copy per session, so every matching subscription's identifier [MQTT-3.3.4-4].
  if (subscriptionIdentifiers !== undefined) packet.subscriptionIdentifier = subscriptionIdentifiers.length === 1 ? subscriptionIdentifiers[0]! : [...subscriptionIdentifiers];
  if (properties === undefined) return packet;
  if (properties.payloadFormatIndicator === true) packet.payloadFormatIndicator = true;
  if (properties.messageExpiryInterval !== undefined) packet.messageExpiryInterval = properties.messageExpiryInterval;
  if (properties.contentType !== undefined) packet.contentType = properties.contentType;
  if (properties.responseTopic !== undefined) packet.responseTopic = properties.responseTopic;
  if (properties.correlationData !== undefined) packet.correlationData = Buffer.from(properties.correlationData);
  // An empty userProperties object makes mqtt-packet's generate() write a broken packet: only set it with pairs.
  if (properties.userProperties !== undefined && properties.userProperties.length > 0) {
    const userProperties: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
    for (const [name, value] of properties.userProperties) {
      const existing = userProperties[name];
      userProperties[name] = existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
    }
    packet.userProperties = userProperties;
  }
  return packet;
}
