/**
 * The MQTT 5 property rules mqtt-packet's parser leaves to servers: which
 * properties a client may put on which packet [MQTT-2.2.2.2, table 2-4], that
 * none but the user properties appears twice, and the values the spec calls
 * a protocol error. mqtt-packet reads any known property on any packet and
 * turns a repeated one into an array, so both are checked here on what it
 * decoded.
 *
 *   property not valid for the packet  → Malformed Packet 0x81 [MQTT-2.2.2.2]
 *   property repeated                  → Protocol Error 0x82 (e.g. [MQTT-3.3.2.3.2])
 *   receive maximum / maximum packet size / subscription identifier of 0 → 0x82
 *   subscription identifier on a client PUBLISH → 0x82 [MQTT-3.3.4-6]
 *   topic alias 0                      → Topic Alias invalid 0x94 [MQTT-3.3.2-8]
 *
 * A topic alias above the maximum the server announced is the connection's
 * check (it knows the maximum).
 */
import type { Packet } from 'mqtt-packet';
import { ReasonCode } from './reason-codes.js';

export interface PropertyProblem {
  readonly reason: string;
  readonly reasonCode: ReasonCode;
}

const publishProperties = ['payloadFormatIndicator', 'messageExpiryInterval', 'topicAlias', 'responseTopic', 'correlationData', 'userProperties', 'contentType'];
const acknowledgementProperties = ['reasonString', 'userProperties'];

/** Table 2-4, client-to-server packets only. */
const allowedProperties: Readonly<Record<string, readonly string[]>> = {
  connect: [
    'sessionExpiryInterval', 'receiveMaximum', 'maximumPacketSize', 'topicAliasMaximum', 'requestResponseInformation',
    'requestProblemInformation', 'userProperties', 'authenticationMethod', 'authenticationData',
  ],
  will: ['willDelayInterval', 'payloadFormatIndicator', 'messageExpiryInterval', 'contentType', 'responseTopic', 'correlationData', 'userProperties'],
  publish: publishProperties,
  puback: acknowledgementProperties,
  pubrec: acknowledgementProperties,
  pubrel: acknowledgementProperties,
  pubcomp: acknowledgementProperties,
  subscribe: ['subscriptionIdentifier', 'userProperties'],
  unsubscribe: ['userProperties'],
  disconnect: ['sessionExpiryInterval', 'reasonString', 'userProperties', 'serverReference'],
  auth: ['authenticationMethod', 'authenticationData', 'reasonString', 'userProperties'],
};

/** Properties that must not be zero when present: a protocol error otherwise. */
const nonZeroProperties = ['receiveMaximum', 'maximumPacketSize', 'subscriptionIdentifier'];

export function v5PropertiesProblem(packet: Packet): PropertyProblem | undefined {
  const own = propertiesProblem(packet.cmd, (packet as { properties?: object }).properties);
  if (own !== undefined || packet.cmd !== 'connect') return own;
  return propertiesProblem('will', packet.will?.properties);
}

function propertiesProblem(where: string, properties: object | undefined): PropertyProblem | undefined {
  if (properties === undefined) return undefined;
  const allowed = allowedProperties[where] ?? [];
  const label = where.toUpperCase();
  for (const [name, value] of Object.entries(properties)) {
    if (where === 'publish' && name === 'subscriptionIdentifier') {
      return { reason: 'a client PUBLISH must not carry a subscription identifier [MQTT-3.3.4-6]', reasonCode: ReasonCode.protocolError };
    }
    if (!allowed.includes(name)) {
      return { reason: `property ${name} is not valid on ${label} [MQTT-2.2.2.2]`, reasonCode: ReasonCode.malformedPacket };
    }
    if (name !== 'userProperties' && Array.isArray(value)) {
      return { reason: `property ${name} appears more than once on ${label}`, reasonCode: ReasonCode.protocolError };
    }
    if (nonZeroProperties.includes(name) && value === 0) {
      return { reason: `property ${name} of 0 on ${label} is a protocol error`, reasonCode: ReasonCode.protocolError };
    }
    if (name === 'topicAlias' && value === 0) {
      return { reason: 'topic alias 0 is not permitted [MQTT-3.3.2-8]', reasonCode: ReasonCode.topicAliasInvalid };
    }
  }
  return undefined;
}
