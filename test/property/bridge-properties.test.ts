/**
 * The bridge's MQTT 5 ⇄ AMQP property mapping (core/bridge-properties.ts)
 * round-trips: for any MQTT 5 properties whose strings fit AMQP's short
 * strings, the AMQP properties they become map back to the same properties
 * (user properties grouped by name, in the order of each name's first
 * appearance, as AMQP headers are a table; correlation data byte for byte,
 * UTF-8 or not; the expiry to the millisecond), and the AMQP properties are
 * well formed for the AMQP codec. The seed is printed (CAIRN_TEST_SEED).
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { amqpPropertiesOfMqtt, mqttPropertiesOf } from '../../src/core/bridge-properties.js';
import type { MessageProperties, StoredMessage } from '../../src/projections/state.js';
import { validateProperties } from '../../src/protocols/amqp/codec/index.js';
import { announceSeed } from '../support/kit.js';

const seed = announceSeed('bridge properties');
const shortText = fc.string({ maxLength: 40 });
const publishedAt = 1_800_000_000_000;

const mqttProperties: fc.Arbitrary<MessageProperties> = fc.record(
  {
    payloadUtf8: fc.constant(true as const),
    expiresAt: fc.integer({ min: publishedAt, max: publishedAt + 0xffffffff * 1000 }),
    contentType: shortText,
    responseTopic: shortText,
    correlationData: fc.uint8Array({ maxLength: 300 }),
    userProperties: fc.array(fc.tuple(fc.constantFrom('a', 'b', '__proto__', 'x-y', 'ü'), shortText), { minLength: 1, maxLength: 5 }),
  },
  { requiredKeys: [] },
);

/** User properties as an AMQP table keeps them: each name's values together, names in first-appearance order. */
function grouped(pairs: ReadonlyArray<readonly [string, string]>): Array<readonly [string, string]> {
  const names = [...new Set(pairs.map(([name]) => name))];
  return names.flatMap((name) => pairs.filter(([other]) => other === name));
}

it('MQTT 5 properties → AMQP properties → the same MQTT 5 properties', () => {
  fc.assert(
    fc.property(mqttProperties, fc.constantFrom(0, 1, 2), (properties, qos) => {
      const raw = amqpPropertiesOfMqtt(properties, qos, publishedAt);
      validateProperties(Buffer.from(raw));
      const message: StoredMessage = { lsn: 1, timestamp: publishedAt, topic: 't', payload: new Uint8Array(), exchange: 'amq.topic', properties: raw };
      const back = mqttPropertiesOf(message) ?? {};
      const expected: Record<string, unknown> = { ...properties };
      if (properties.userProperties !== undefined) expected['userProperties'] = grouped(properties.userProperties);
      const actual: Record<string, unknown> = { ...back };
      if (back.correlationData !== undefined) actual['correlationData'] = Buffer.from(back.correlationData);
      if (properties.correlationData !== undefined) expected['correlationData'] = Buffer.from(properties.correlationData);
      expect(actual).toEqual(expected);
    }),
    { seed, numRuns: 300 },
  );
});
