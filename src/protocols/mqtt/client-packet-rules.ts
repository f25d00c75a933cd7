/**
 * The MQTT 3.1.1 rules every decoded client packet must follow, beyond what
 * mqtt-packet's parser checks: the one place where a packet that parsed but
 * breaks the protocol is turned away. The codec runs checkClientPacket on
 * every packet it decodes; a violation comes back as a malformed result, and
 * the connection closes (only) itself [MQTT-4.8.0-1]. Handlers therefore only
 * see packets that follow these rules, and their types say so: a packet id is
 * a number in 1…65535 wherever the packet must carry one.
 *
 * What is checked here and not by mqtt-packet:
 * - only client-to-server packet types;
 * - packet identifiers present and non-zero [MQTT-2.3.1-1] (mqtt-packet
 *   reports a missing one as -1, or not at all for PUBACK/PUBREC/PUBCOMP);
 * - the fixed lengths of PUBACK, PUBREC, PUBREL, PUBCOMP (2), PINGREQ and
 *   DISCONNECT (0);
 * - SUBSCRIBE and UNSUBSCRIBE carry at least one filter [MQTT-3.8.3-3] [MQTT-3.10.3-2];
 * - PUBLISH: DUP only with QoS > 0 [MQTT-3.3.1-2], a valid topic name without
 *   wildcards [MQTT-3.3.2-2];
 * - CONNECT: no password without a user name [MQTT-3.1.2-22], a valid will
 *   topic and QoS [MQTT-3.1.2-14], nothing after its last field;
 * - every string: well-formed UTF-8 [MQTT-1.5.3-1] without U+0000 [MQTT-1.5.3-2]; in MQTT 5
 *   also the strings inside properties [MQTT-1.5.4-1] [MQTT-1.5.4-2].
 *
 * MQTT 5 (protocol level 5) changes three of these: acknowledgements and
 * DISCONNECT may carry a reason code and properties after their fixed part,
 * a PUBLISH may have an empty topic when it carries a topic alias
 * [MQTT-3.3.2-1], and AUTH is a client packet. Its properties follow
 * v5-property-rules.ts; a violation there carries the reason code for the
 * DISCONNECT or CONNACK.
 *
 * What a packet means in context (a second CONNECT, a filter the broker will
 * not grant, a limit) is the connection's and the handlers' business.
 */
import type {
  IAuthPacket,
  IConnectPacket,
  IDisconnectPacket,
  IPingreqPacket,
  IPubackPacket,
  IPubcompPacket,
  IPublishPacket,
  IPubrecPacket,
  IPubrelPacket,
  ISubscribePacket,
  IUnsubscribePacket,
  Packet,
} from 'mqtt-packet';
import { validateTopicName } from '../../core/topic-filter.js';
import type { ReasonCode } from './reason-codes.js';
import { findStringFieldProblem } from './string-fields.js';
import { v5PropertiesProblem } from './v5-property-rules.js';

/** The protocol levels Cairn speaks: 4 is MQTT 3.1.1, 5 is MQTT 5.0. */
export type ProtocolVersion = 4 | 5;

/** A packet that must carry an identifier, once checked: it does, and it is in 1…65535. */
type WithPacketId<P> = P & { readonly messageId: number };

/** A PUBLISH has a packet identifier exactly when its QoS is above 0 [MQTT-2.3.1-5]. */
export type ClientPublishPacket = (IPublishPacket & { readonly qos: 0 }) | WithPacketId<IPublishPacket & { readonly qos: 1 | 2 }>;

/** The packets a client may send to a server, as they are once checkClientPacket accepted them. */
export type ClientPacket =
  | IConnectPacket
  | ClientPublishPacket
  | WithPacketId<IPubackPacket>
  | WithPacketId<IPubrecPacket>
  | WithPacketId<IPubrelPacket>
  | WithPacketId<IPubcompPacket>
  | WithPacketId<ISubscribePacket>
  | WithPacketId<IUnsubscribePacket>
  | IPingreqPacket
  | IDisconnectPacket
  | IAuthPacket;

/** The checked packet of one type, for its handler: ClientPacketOf<'puback'> has a messageId. */
export type ClientPacketOf<C extends ClientPacket['cmd']> = Extract<ClientPacket, { readonly cmd: C }>;

export type DecodeResult =
  | { readonly kind: 'packet'; readonly packet: ClientPacket }
  | { readonly kind: 'malformed'; readonly reason: string; readonly reasonCode?: ReasonCode };

const packetIdMax = 0xffff;

/**
 * `bytes` is the whole packet `packet` was decoded from. `checkedTopic`: a topic name that passed
 * these rules before, decoded from the same bytes as this packet's (topic-memo.ts clears it when
 * other bytes come): a PUBLISH carrying it skips the topic's checks.
 */
export function checkClientPacket(packet: Packet, bytes: Buffer, protocolVersion: ProtocolVersion, checkedTopic?: string): DecodeResult {
  // A CONNECT names its own version; every later packet is read at the connection's.
  const version = packet.cmd === 'connect' ? packet.protocolVersion : protocolVersion;
  if (version === 5) {
    const v5Problem = v5ProblemOf(packet, bytes);
    if (v5Problem !== undefined) return v5Problem;
  }
  const problem = findProblem(packet, bytes, version === 5, checkedTopic);
  // The cast is what the checks above proved: e.g. a packet id is present where ClientPacket says so.
  return problem === undefined ? { kind: 'packet', packet: packet as ClientPacket } : { kind: 'malformed', reason: problem };
}

/**
 * checkClientPacket for what decodeHotPacket decoded (a PUBLISH, a PUBACK of 2 bytes), through functions that only
 * PUBLISH packets reach. The general ones also see mqtt-packet's packets (a CONNECT's, a SUBSCRIBE's), whose shapes
 * V8 forgets at a full GC once none is alive: the optimised code they shared with the hot packets was then thrown
 * away and compiled again, on a CPU the round trips wanted. The same rules, the same answers.
 */
export function checkHotPacket(packet: IPublishPacket | IPubackPacket, bytes: Buffer, protocolVersion: ProtocolVersion, checkedTopic?: string): DecodeResult {
  if (packet.cmd === 'puback') {
    // Its length is 2 (decodeHotPacket takes no other): only the id can be wrong.
    return isPacketId(packet.messageId) ? { kind: 'packet', packet: packet as ClientPacket } : { kind: 'malformed', reason: missingPacketId('PUBACK') };
  }
  const v5 = protocolVersion === 5;
  // A property-less v5 PUBLISH (the common one) has nothing for the v5 checks to look at.
  if (v5 && packet.properties !== undefined) {
    const v5Problem = v5ProblemOf(packet, bytes);
    if (v5Problem !== undefined) return v5Problem;
  }
  const problem = publishProblem(packet, bytes, v5, checkedTopic);
  return problem === undefined ? { kind: 'packet', packet: packet as ClientPacket } : { kind: 'malformed', reason: problem };
}

/** MQTT 5's property rules and the strings inside properties (a CONNECT's are walked by connectProblem). */
function v5ProblemOf(packet: Packet, bytes: Buffer): DecodeResult | undefined {
  const propertyProblem = v5PropertiesProblem(packet);
  if (propertyProblem !== undefined) return { kind: 'malformed', ...propertyProblem };
  const stringProblem = packet.cmd !== 'connect' && propertyStringsSuspect((packet as { properties?: object }).properties) ? findStringFieldProblem(bytes, true) : undefined;
  return stringProblem === undefined ? undefined : { kind: 'malformed', reason: stringProblem };
}

function findProblem(packet: Packet, bytes: Buffer, v5: boolean, checkedTopic: string | undefined): string | undefined {
  switch (packet.cmd) {
    case 'connect':
      return connectProblem(packet, bytes, v5);
    case 'publish':
      return publishProblem(packet, bytes, v5, checkedTopic);
    case 'puback':
    case 'pubrec':
    case 'pubrel':
    case 'pubcomp':
      // MQTT 5 may add a reason code and properties after the packet id [MQTT-3.4.2-1].
      return (v5 ? undefined : lengthProblem(packet, 2)) ?? packetIdProblem(packet);
    case 'subscribe':
      return (
        packetIdProblem(packet) ??
        (packet.subscriptions.length === 0 ? 'SUBSCRIBE without a topic filter [MQTT-3.8.3-3]' : undefined) ??
        stringsProblem(packet.subscriptions.map((subscription) => subscription.topic), bytes, v5)
      );
    case 'unsubscribe':
      return (
        packetIdProblem(packet) ??
        (packet.unsubscriptions.length === 0 ? 'UNSUBSCRIBE without a topic filter [MQTT-3.10.3-2]' : undefined) ??
        stringsProblem(packet.unsubscriptions, bytes, v5)
      );
    case 'pingreq':
      return lengthProblem(packet, 0);
    case 'disconnect':
      return v5 ? undefined : lengthProblem(packet, 0);
    case 'auth':
      return v5 ? undefined : 'AUTH exists only in MQTT 5';
    default:
      return `${packet.cmd.toUpperCase()} is not a packet a client may send`;
  }
}

function packetIdProblem(packet: Packet): string | undefined {
  return isPacketId(packet.messageId) ? undefined : missingPacketId(packet.cmd.toUpperCase());
}

/** Takes the id, not the packet: PUBLISH's check calls it, and no other packet's shape may reach that code. */
function isPacketId(id: number | undefined): boolean {
  return id !== undefined && Number.isInteger(id) && id >= 1 && id <= packetIdMax;
}

function missingPacketId(packetName: string): string {
  return `${packetName} needs a non-zero packet identifier [MQTT-2.3.1-1]`;
}

/** mqtt-packet reads what it needs and ignores the rest: a fixed-size packet of another size is malformed. */
function lengthProblem(packet: Packet, remainingLength: number): string | undefined {
  if (packet.length === remainingLength) return undefined;
  return `${packet.cmd.toUpperCase()} must have a remaining length of ${remainingLength}, has ${packet.length ?? '?'}`;
}

function publishProblem(packet: IPublishPacket, bytes: Buffer, v5: boolean, checkedTopic: string | undefined): string | undefined {
  if (packet.qos > 0) {
    if (!isPacketId(packet.messageId)) return missingPacketId('PUBLISH');
  } else if (packet.dup) {
    return 'PUBLISH with QoS 0 must not have DUP set [MQTT-3.3.1-2]';
  }
  // Its only string is the topic (a v5 PUBLISH's property strings were checked above).
  if (checkedTopic !== undefined && packet.topic === checkedTopic) return undefined;
  // An empty topic with a topic alias means the topic the alias stands for [MQTT-3.3.2-1]; the connection resolves it.
  if (v5 && packet.topic === '' && packet.properties?.topicAlias !== undefined) return undefined;
  const topicProblem = validateTopicName(packet.topic);
  if (topicProblem !== undefined) return `PUBLISH topic '${packet.topic.slice(0, 128)}': ${topicProblem}`;
  return stringsProblem([packet.topic], bytes, v5);
}

function connectProblem(packet: IConnectPacket, bytes: Buffer, v5: boolean): string | undefined {
  if (packet.password !== undefined && packet.username === undefined) {
    return 'password flag set without the user name flag [MQTT-3.1.2-22]';
  }
  const will = packet.will;
  if (will !== undefined) {
    if ((will.qos ?? 0) > 2) return 'will QoS must be 0, 1 or 2 [MQTT-3.1.2-14]';
    const topicProblem = validateTopicName(will.topic);
    if (topicProblem !== undefined) return `will topic: ${topicProblem}`;
  }
  const strings = [packet.clientId, ...(packet.username === undefined ? [] : [packet.username])];
  return nullCharacterProblem(strings) ?? findStringFieldProblem(bytes, v5);
}

/**
 * U+0000 is refused outright [MQTT-1.5.3-2]. A decoded U+FFFD may be a real
 * one or the decoder's stand-in for ill-formed bytes: only then are the bytes
 * themselves checked (string-fields.ts), so well-behaved traffic pays nothing.
 */
function stringsProblem(strings: readonly string[], bytes: Buffer, v5: boolean): string | undefined {
  const replacementSeen = strings.some((value) => value.includes('\ufffd'));
  return nullCharacterProblem(strings) ?? (replacementSeen ? findStringFieldProblem(bytes, v5) : undefined);
}

/**
 * Whether a decoded property string may stand for bad bytes: U+FFFD (the decoder's stand-in for
 * an ill-formed sequence) or U+0000. Only then are the properties walked on the wire bytes.
 */
function propertyStringsSuspect(properties: object | undefined): boolean {
  if (properties === undefined) return false;
  // for-in, not Object.entries: no array of pairs per packet (the decoders' objects have no inherited enumerables).
  const decoded = properties as Record<string, unknown>;
  for (const name in decoded) {
    const value = decoded[name];
    if (name !== 'userProperties') {
      if (suspectString(value)) return true;
      continue;
    }
    const userProperties = value as Record<string, unknown>;
    for (const key in userProperties) {
      const values = userProperties[key];
      if (suspectString(key) || (Array.isArray(values) ? values.some(suspectString) : suspectString(values))) return true;
    }
  }
  return false;
}

function suspectString(value: unknown): boolean {
  return typeof value === 'string' && (value.includes('\ufffd') || value.includes('\u0000'));
}

function nullCharacterProblem(strings: readonly string[]): string | undefined {
  return strings.some((value) => value.includes('\u0000')) ? 'a string contains the null character U+0000 [MQTT-1.5.3-2]' : undefined;
}
