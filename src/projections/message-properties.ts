/**
 * MQTT 5 message properties between code and record: long names in code
 * (MessageProperties, state.ts), short keys in msg and retain bodies
 * (MessagePropertiesBody, records.ts). Pure. An absent property stays absent,
 * so a 3.1.1 message costs no byte, and a record written before MQTT 5 (no
 * `m`) reads as a message without properties.
 */
import type { MessagePropertiesBody } from './records.js';
import type { MessageProperties } from './state.js';

export function messagePropertiesBody(properties: MessageProperties): MessagePropertiesBody {
  const body: { -readonly [K in keyof MessagePropertiesBody]: MessagePropertiesBody[K] } = {};
  if (properties.payloadUtf8) body.pf = 1;
  if (properties.expiresAt !== undefined) body.ea = properties.expiresAt;
  if (properties.contentType !== undefined) body.ct = properties.contentType;
  if (properties.responseTopic !== undefined) body.rt = properties.responseTopic;
  if (properties.correlationData !== undefined) body.cd = properties.correlationData;
  if (properties.userProperties !== undefined) body.up = properties.userProperties;
  return body;
}

export function messagePropertiesOf(body: MessagePropertiesBody): MessageProperties {
  const properties: { -readonly [K in keyof MessageProperties]: MessageProperties[K] } = {};
  if (body.pf === 1) properties.payloadUtf8 = true;
  if (body.ea !== undefined) properties.expiresAt = body.ea;
  if (body.ct !== undefined) properties.contentType = body.ct;
  if (body.rt !== undefined) properties.responseTopic = body.rt;
  if (body.cd !== undefined) properties.correlationData = body.cd;
  if (body.up !== undefined) properties.userProperties = body.up;
  return properties;
}
