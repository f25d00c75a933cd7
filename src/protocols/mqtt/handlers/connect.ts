/**
 * CONNECT [MQTT-3.1]: protocol name and level, client identifier, credentials,
 * will, then the core's session. CONNACK 0 is written only once the session's
 * records are durable; every refusal is thrown as MqttConnectRefusedError
 * (CONNACK with its code, then close) or MqttProtocolError (close without
 * CONNACK), and connection.fail() does the writing.
 */
import { isUtf8 } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import type { IConnectPacket } from 'mqtt-packet';
import type { Qos } from '../../../core/api.js';
import type { AuthOutcome } from '../../../auth/users.js';
import { ConnackReturnCode, peekConnectProtocol } from '../codec.js';
import type { MqttConnection, Will } from '../connection.js';
import { MqttConnectRefusedError, MqttLogFailedError, MqttProtocolError } from '../errors.js';
import type { ConnackProperties } from '../packet-encoder.js';
import { ReasonCode } from '../reason-codes.js';
import { OutboundTopicAliases } from '../outbound-topic-aliases.js';
import { InboundTopicAliases } from '../topic-aliases.js';
import { incomingPropertiesOf } from '../publish-properties.js';
import { topicAccessFor } from '../topic-access.js';

const protocolName = 'MQTT';
/** 4 is MQTT 3.1.1, 5 is MQTT 5.0; both are served on the same listeners. */
const protocolLevels: readonly number[] = [4, 5];
/** MQTT 3.1 called itself this; such a client gets the "unacceptable protocol version" answer. */
const legacyProtocolName = 'MQIsdp';

/**
 * Runs on the raw bytes of the first packet, before the full decode: the codec
 * refuses protocol levels it does not know, but a 3.1.1 server must answer
 * them with CONNACK 1 rather than just close [MQTT-3.1.2-2].
 */
export function checkConnectProtocol(bytes: Buffer): void {
  const protocol = peekConnectProtocol(bytes);
  if (protocol === undefined) return; // not a CONNECT, or too short: the decoder and dispatch refuse it
  if (protocol.name !== protocolName && protocol.name !== legacyProtocolName) {
    throw new MqttProtocolError(`unknown protocol name '${protocol.name.slice(0, 32)}' [MQTT-3.1.2-1]`, 'protocol-violation', 'connect');
  }
  if (protocol.name !== protocolName || !protocolLevels.includes(protocol.level)) {
    throw new MqttConnectRefusedError(
      ConnackReturnCode.unacceptableProtocolVersion,
      `protocol ${protocol.name} level ${protocol.level} is not supported, only MQTT levels 4 (3.1.1) and 5 (5.0) [MQTT-3.1.2-2]`,
    );
  }
}

export async function handleConnect(connection: MqttConnection, packet: IConnectPacket): Promise<void> {
  connection.beginConnect();
  const v5 = packet.protocolVersion === 5;
  if (v5) refuseEnhancedAuthentication(packet);
  // MQTT 5 splits clean_session in two: Clean Start, and a session that outlives the connection only with an expiry > 0 [MQTT-3.1.2-23].
  const cleanSession = packet.clean !== false;
  const sessionExpiryInterval = v5 ? (packet.properties?.sessionExpiryInterval ?? 0) : undefined;
  connection.sessionExpiryInterval = sessionExpiryInterval;
  const clientId = chooseClientId(packet.clientId, cleanSession, v5);
  if (v5) acceptClientLimits(connection, packet);
  const will = readWill(packet);
  const { core, users, acl } = connection.context;
  // A verified certificate's CN stands for user name and password (Mosquitto's use_identity_as_username).
  const identity = connection.certificateIdentity;
  const username = identity ?? packet.username;
  const outcome = identity !== undefined ? users.admit('mqtt', identity) : await users.authenticate('mqtt', packet.username, packet.password);
  if (connection.isClosed) return;
  if (outcome === 'bad-credentials' || outcome === 'not-authorized') {
    // At warn, so the default level shows failed logins; the connection's logger names the remote address.
    connection.logger.warn({ user: username ?? null, clientId: packet.clientId, outcome }, 'MQTT login refused');
  }
  refuseUnlessAllowed(outcome, username);
  if (acl !== undefined) connection.topicAccess = topicAccessFor(acl, { username, clientId }, connection.context.accessDenied);
  // As Mosquitto: a will the client could not publish itself refuses the CONNECT.
  if (will !== undefined && !connection.topicAccess.mayPublish(will.topic)) {
    throw new MqttConnectRefusedError(ConnackReturnCode.notAuthorized, `the ACL does not let '${username ?? ''}' publish its will topic '${will.topic.slice(0, 128)}'`);
  }

  const reader = acl === undefined ? undefined : connection.topicAccess;
  const { session, sessionPresent, durable } = core.connect(clientId, cleanSession, connection, reader, { sessionExpiryInterval });
  connection.attach(clientId, session, will, username);
  if (durable !== undefined) {
    try {
      await durable;
    } catch (error: unknown) {
      throw new MqttLogFailedError('CONNECT: the session could not be recorded', error);
    }
  }
  // Taken over or dropped while the records were written: nothing to answer.
  if (connection.isClosed) return;
  const assigned = packet.clientId.length === 0 ? clientId : undefined;
  connection.accepted(sessionPresent, packet.keepalive ?? 0, v5 ? connackProperties(connection, assigned) : {});
}

/** Enhanced authentication [MQTT-4.12] is not implemented: a CONNECT that asks for it is refused with 0x8C. */
function refuseEnhancedAuthentication(packet: IConnectPacket): void {
  const method = packet.properties?.authenticationMethod;
  if (method === undefined) return;
  throw new MqttConnectRefusedError(
    ConnackReturnCode.notAuthorized, `authentication method '${method.slice(0, 64)}' is not supported [MQTT-4.12.0-1]`, ReasonCode.badAuthenticationMethod,
  );
}

/** What a v5 client says it can take: its receive window, packet size, and our alias table for it. */
function acceptClientLimits(connection: MqttConnection, packet: IConnectPacket): void {
  const properties = packet.properties;
  connection.inflightMax = properties?.receiveMaximum;
  connection.clientPacketBytesMax = properties?.maximumPacketSize;
  connection.topicAliases = new InboundTopicAliases(connection.context.limits.topicAliasesMax);
  // The client's Topic Alias Maximum: how many aliases we may set up towards it (0 or absent: none) [MQTT-3.1.2-26].
  const aliasMax = properties?.topicAliasMaximum ?? 0;
  if (aliasMax > 0) connection.outboundTopicAliases = new OutboundTopicAliases(aliasMax);
}

/**
 * CONNACK's properties [MQTT-3.2.2.3]: the bounds this broker holds a v5
 * client to, and what it supports. Maximum QoS is left out: 2 is the default.
 * Shared subscriptions (core/shared-subscription.ts) and subscription identifiers (core/subscription-delivery.ts) are offered.
 */
function connackProperties(connection: MqttConnection, assignedClientIdentifier: string | undefined): ConnackProperties {
  const { limits } = connection.context;
  return {
    receiveMaximum: limits.inboundAcksPendingMax,
    maximumPacketSize: limits.packetBytesMax,
    topicAliasMaximum: limits.topicAliasesMax,
    retainAvailable: true,
    wildcardSubscriptionAvailable: true,
    subscriptionIdentifiersAvailable: true,
    sharedSubscriptionAvailable: true,
    ...(assignedClientIdentifier !== undefined ? { assignedClientIdentifier } : {}),
  };
}

function chooseClientId(requested: string, cleanSession: boolean, v5: boolean): string {
  if (requested.length > 0) return requested;
  // A 3.1.1 persistent session needs a name the client can come back to [MQTT-3.1.3-8]; MQTT 5 tells the client the name it assigned.
  if (!cleanSession && !v5) {
    throw new MqttConnectRefusedError(ConnackReturnCode.identifierRejected, 'empty client id requires clean session [MQTT-3.1.3-8]');
  }
  // A server may assign a unique identifier to a clean-session client [MQTT-3.1.3-6].
  return `cairn-${randomBytes(12).toString('base64url')}`;
}

/** The will as the session keeps it; its topic and QoS were checked with the packet (client-packet-rules.ts). */
function readWill(packet: IConnectPacket): Will | undefined {
  const will = packet.will;
  if (will === undefined) return undefined;
  // Copied: the decoded payload is a view of a socket chunk that would otherwise stay alive with it.
  const payload = typeof will.payload === 'string' ? Buffer.from(will.payload, 'utf8') : Buffer.from(will.payload);
  // A v5 will that says UTF-8 must be UTF-8: CONNACK 0x99 otherwise [MQTT-3.1.3.2.3].
  if (will.properties?.payloadFormatIndicator === true && !isUtf8(payload)) {
    throw new MqttProtocolError('will payload is not UTF-8 as its Payload Format Indicator says', 'protocol-violation', 'connect', ReasonCode.payloadFormatInvalid);
  }
  return {
    topic: will.topic, payload, qos: (will.qos ?? 0) as Qos, retain: will.retain === true, properties: incomingPropertiesOf(will.properties),
    delayInterval: will.properties?.willDelayInterval,
  };
}

/** The one mapping from authentication outcomes to CONNACK return codes. */
function refuseUnlessAllowed(outcome: AuthOutcome, username: string | undefined): void {
  switch (outcome) {
    case 'allowed':
      return;
    case 'bad-credentials':
      throw new MqttConnectRefusedError(ConnackReturnCode.badUserNameOrPassword, `bad user name or password for '${username ?? ''}'`);
    case 'not-authorized':
      throw new MqttConnectRefusedError(
        ConnackReturnCode.notAuthorized,
        username === undefined ? 'credentials required' : `user '${username}' is not a user that may use MQTT`,
      );
    case 'busy':
      throw new MqttConnectRefusedError(ConnackReturnCode.serverUnavailable, 'too many logins being verified, try again');
  }
}
