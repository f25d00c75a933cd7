/** Projection of retained values: the last retained message per topic; an empty payload clears it [MQTT-3.3.1-10]. Pure. */
import { messagePropertiesOf } from './message-properties.js';
import type { RetainBody } from './records.js';
import type { BrokerState } from './state.js';

export function applyRetain(state: BrokerState, body: RetainBody, lsn: number, timestamp: number): void {
  if (body.p.length === 0) state.retained.delete(body.t);
  else state.retained.set(body.t, { topic: body.t, payload: body.p, qos: body.qos, lsn, timestamp, ...(body.m !== undefined ? { mqttProperties: messagePropertiesOf(body.m) } : {}) });
}
