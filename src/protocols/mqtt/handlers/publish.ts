/**
 * PUBLISH from a client [MQTT-3.3]. Its topic name was checked with the
 * packet (client-packet-rules.ts: no wildcards [MQTT-3.3.2-2]). The
 * acknowledgement (PUBACK for QoS 1 [MQTT-4.3.2-2], PUBREC for QoS 2
 * [MQTT-4.3.3-2]) is sent only once the core says the message is durable; a
 * QoS 2 resend of an id whose PUBREL has not arrived is not routed again by
 * the core, and gets its PUBREC again. A PUBLISH the topic ACL refuses is
 * dropped and acknowledged at once (its PUBREL then finds no packet id to
 * forget, and gets PUBCOMP); an MQTT 5 client hears why: 0x87 Not authorized.
 * MQTT 5 adds the topic alias (resolved first, topic-aliases.ts) and the
 * Receive Maximum, the bound on this client's unfinished QoS 1/2 flows. A v5
 * PUBLISH whose Payload Format Indicator says UTF-8 but whose payload is not
 * is refused: PUBACK/PUBREC 0x99 (QoS 1/2) or DISCONNECT 0x99 (QoS 0)
 * [MQTT-3.3.2.3.2]. A message that reached no destination is acknowledged
 * with 0x10 No matching subscribers, as Mosquitto does (a code the spec lets
 * the server choose instead of 0x00); a QoS 1 message that a full
 * reject-publish queue refused with PUBACK 0x97 Quota exceeded, as RabbitMQ
 * does (the other destinations have it).
 */
import { isUtf8 } from 'node:buffer';
import type { MqttIncomingPublish } from '../../../core/api.js';
import { incomingPropertiesOf } from '../publish-properties.js';
import type { ClientPacketOf } from '../client-packet-rules.js';
import type { MqttConnection } from '../connection.js';
import { MqttProtocolError } from '../errors.js';
import { ReasonCode } from '../reason-codes.js';
import { markStage, Stage } from '../../../stage-timing.js';

export function handlePublish(connection: MqttConnection, packet: ClientPacketOf<'publish'>): void {
  markStage(Stage.decoded);
  // A view of the read's bytes, which the socket may only have lent: the core copies it if it keeps the message.
  const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload, 'utf8') : packet.payload;
  const topic = connection.topicAliases.resolve(packet.topic, packet.properties?.topicAlias);
  if (packet.qos > 0) connection.beginInboundPublish(packet.messageId as number);
  const { encoder } = connection;
  if (!connection.topicAccess.mayPublish(topic)) {
    connection.logger.debug({ topic: topic.slice(0, 128), qos: packet.qos }, 'MQTT PUBLISH refused by the ACL: dropped');
    // MQTT 3.1.1 has no negative acknowledgement: the flow completes as if the message had gone nowhere.
    refuse(connection, packet, ReasonCode.notAuthorized);
    return;
  }
  if (encoder.protocolVersion === 5 && packet.properties?.payloadFormatIndicator === true && !isUtf8(payload)) {
    if (packet.qos === 0) {
      throw new MqttProtocolError('PUBLISH payload is not UTF-8 as its Payload Format Indicator says', 'protocol-violation', 'publish', ReasonCode.payloadFormatInvalid);
    }
    connection.logger.debug({ topic: topic.slice(0, 128), qos: packet.qos }, 'MQTT PUBLISH payload is not UTF-8 as its format indicator says: refused (0x99)');
    refuse(connection, packet, ReasonCode.payloadFormatInvalid);
    return;
  }
  const properties = incomingPropertiesOf(packet.properties);
  if (packet.qos === 0) {
    const result = connection.session.publish({ topic, payload, qos: 0, retain: packet.retain, properties });
    // QoS 0 has nothing to acknowledge, but a failed log still ends the connection.
    connection.whenDurable(result.durable, 'PUBLISH QoS 0', () => undefined);
    return;
  }
  const packetId = packet.messageId;
  const incoming: MqttIncomingPublish = { topic, payload, qos: packet.qos, retain: packet.retain, packetId, properties };
  const result = connection.session.publish(incoming);
  markStage(Stage.routed);
  const reasonCode = result.noSubscribers === true ? ReasonCode.noMatchingSubscribers : ReasonCode.success;
  if (packet.qos === 1) {
    // Only on PUBACK: a failing PUBREC would end the QoS 2 flow while the core still holds its packet id.
    const pubackCode = result.quotaExceeded === true ? ReasonCode.quotaExceeded : reasonCode;
    // Nothing to wait for (no durable destination, no earlier acknowledgement awaited): acknowledged now, without a closure per PUBLISH.
    if (result.durable === undefined && !connection.awaitsAcknowledgements) return puback(connection, packetId, pubackCode);
    connection.whenDurable(result.durable, 'PUBLISH QoS 1', () => puback(connection, packetId, pubackCode));
  } else {
    connection.whenDurable(result.durable, 'PUBLISH QoS 2', () => connection.write(encoder.pubrec(packetId, reasonCode)));
  }
}

function puback(connection: MqttConnection, packetId: number, reasonCode: ReasonCode): void {
  markStage(Stage.resolved);
  connection.endInboundPublish(packetId);
  connection.write(connection.encoder.puback(packetId, reasonCode));
}

/** A QoS 1/2 PUBLISH not taken: its flow ends with the failure code (a 3.1.1 client sees a plain acknowledgement). */
function refuse(connection: MqttConnection, packet: ClientPacketOf<'publish'>, reasonCode: ReasonCode): void {
  const { encoder } = connection;
  if (packet.qos === 1) {
    connection.endInboundPublish(packet.messageId);
    connection.write(encoder.puback(packet.messageId, reasonCode));
  }
  // A v5 PUBREC with a failure code ends the flow [MQTT-4.3.3-4]: no PUBREL follows.
  if (packet.qos === 2) {
    if (encoder.protocolVersion === 5) connection.endInboundPublish(packet.messageId);
    connection.write(encoder.pubrec(packet.messageId, reasonCode));
  }
}
