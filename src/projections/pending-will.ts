/**
 * A delayed MQTT 5 will between code and record: long names in code
 * (PendingWill, state.ts), short keys in the session `offline` record's `w`
 * (WillBody, records.ts). Pure. The will's properties are kept as a
 * message's (message-properties.ts), its Message Expiry Interval apart: it
 * counts from the publication, which has not happened yet.
 */
import { messagePropertiesBody, messagePropertiesOf } from './message-properties.js';
import type { WillBody } from './records.js';
import type { PendingWill } from './state.js';

export function willBody(will: PendingWill): WillBody {
  const body: { -readonly [K in keyof WillBody]: WillBody[K] } = { t: will.topic, p: will.payload, qos: will.qos, at: will.at };
  if (will.retain) body.r = true;
  if (will.properties !== undefined) body.m = messagePropertiesBody(will.properties);
  if (will.messageExpiryInterval !== undefined) body.ei = will.messageExpiryInterval;
  return body;
}

export function pendingWillOf(body: WillBody): PendingWill {
  const will: { -readonly [K in keyof PendingWill]: PendingWill[K] } = { topic: body.t, payload: body.p, qos: body.qos, retain: body.r === true, at: body.at };
  if (body.m !== undefined) will.properties = messagePropertiesOf(body.m);
  if (body.ei !== undefined) will.messageExpiryInterval = body.ei;
  return will;
}
