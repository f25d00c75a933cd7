/**
 * Client sessions for the AMQP fuzzer: well-formed method sequences over a
 * few shared names, so that what random bytes rarely reach is reached —
 * deliveries to consumers on several channels and connections, acks, nacks
 * and rejects (single, multiple, all), requeues, recover, cancels, gets,
 * purges and deletes under consumers, qos and flow changes, confirms, and
 * channels closed and reopened in the middle of it.
 *
 * A session starts on an open channel 1 (context 'channel'): it opens
 * channels 2 and 3, declares the queues `fuzz.q` (transient) and `fuzz.r`
 * (durable: persistent messages reach the log) and the direct exchange
 * `fuzz.x`, and binds them; every session declares them alike, so sessions
 * on concurrent connections share them. Steps that fail (an unknown delivery
 * tag, a queue deleted by another session) close their channel with an error;
 * a later "close and reopen" step brings the channel back.
 */
import fc from 'fast-check';
import { encodeMethodFrame, type AmqpMethodInput } from '../src/protocols/amqp/codec/index.js';
import { basicProperties, bytesOf, publicationFrames } from './amqp-fuzz-frames.js';

const queues = ['fuzz.q', 'fuzz.r'] as const;
const exchange = 'fuzz.x';
const channels = [1, 2, 3] as const;

/** Declarations every session makes identically: a redeclare is never a 406. */
const declarations: readonly AmqpMethodInput[] = [
  { name: 'queue.declare', queue: 'fuzz.q', passive: false, durable: false, exclusive: false, autoDelete: false, noWait: false, arguments: {} },
  { name: 'queue.declare', queue: 'fuzz.r', passive: false, durable: true, exclusive: false, autoDelete: false, noWait: false, arguments: {} },
  { name: 'exchange.declare', exchange, type: 'direct', passive: false, durable: false, autoDelete: false, internal: false, noWait: false, arguments: {} },
];

const start = Buffer.concat([
  encodeMethodFrame(2, { name: 'channel.open' }),
  encodeMethodFrame(3, { name: 'channel.open' }),
  ...declarations.map((method) => encodeMethodFrame(1, method)),
  encodeMethodFrame(1, { name: 'queue.bind', queue: 'fuzz.q', exchange, routingKey: 'k', noWait: false, arguments: {} }),
  encodeMethodFrame(1, { name: 'queue.bind', queue: 'fuzz.r', exchange: 'amq.topic', routingKey: 'fuzz.#', noWait: false, arguments: {} }),
]);

const queue = fc.constantFrom(...queues, '');
const routingKey = fc.constantFrom(...queues, 'k', 'fuzz.a', 'fuzz.a.b');
/** Mostly server-named: reusing a tag on a channel is a connection error (530), which would end the session. */
const consumerTag = fc.oneof({ weight: 6, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('a', 'b') });
/** Most settlements name real tags of a fresh channel; 0 with multiple means all of them. */
const deliveryTag = fc.oneof(fc.integer({ min: 0, max: 8 }), fc.constant(0));

const method: fc.Arbitrary<AmqpMethodInput> = fc.oneof(
  fc.record({ queue, consumerTag, noAck: fc.boolean(), exclusive: fc.boolean(), noWait: fc.boolean() })
    .map((fields) => ({ name: 'basic.consume', ...fields, noLocal: false, arguments: {} }) as const),
  fc.record({ consumerTag, noWait: fc.boolean() }).map((fields) => ({ name: 'basic.cancel', ...fields }) as const),
  fc.record({ queue, noAck: fc.boolean() }).map((fields) => ({ name: 'basic.get', ...fields }) as const),
  fc.record({ deliveryTag, multiple: fc.boolean() }).map((fields) => ({ name: 'basic.ack', ...fields }) as const),
  fc.record({ deliveryTag, multiple: fc.boolean(), requeue: fc.boolean() }).map((fields) => ({ name: 'basic.nack', ...fields }) as const),
  fc.record({ deliveryTag, requeue: fc.boolean() }).map((fields) => ({ name: 'basic.reject', ...fields }) as const),
  fc.record({ prefetchCount: fc.integer({ min: 0, max: 4 }), global: fc.boolean() }).map((fields) => ({ name: 'basic.qos', prefetchSize: 0, ...fields }) as const),
  fc.constant({ name: 'basic.recover', requeue: true } as const),
  fc.boolean().map((active) => ({ name: 'channel.flow', active }) as const),
  fc.boolean().map((noWait) => ({ name: 'confirm.select', noWait }) as const),
  fc.record({ queue, noWait: fc.boolean() }).map((fields) => ({ name: 'queue.purge', ...fields }) as const),
  fc.record({ queue, ifUnused: fc.boolean(), ifEmpty: fc.boolean(), noWait: fc.boolean() }).map((fields) => ({ name: 'queue.delete', ...fields }) as const),
  fc.record({ queue, routingKey }).map((fields) => ({ name: 'queue.unbind', ...fields, exchange, arguments: {} }) as const),
  fc.record({ queue, routingKey, noWait: fc.boolean() }).map((fields) => ({ name: 'queue.bind', ...fields, exchange, arguments: {} }) as const),
  fc.constantFrom(...declarations),
);

/** channel.close then channel.open: ends the channel (requeueing what it held) and starts it afresh. */
const reopen = (channel: number): Buffer => Buffer.concat([
  encodeMethodFrame(channel, { name: 'channel.close', replyCode: 200, replyText: 'again', failedClassId: 0, failedMethodId: 0 }),
  encodeMethodFrame(channel, { name: 'channel.open' }),
]);

const step: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 12, arbitrary: fc.tuple(fc.constantFrom(...channels), method).map(([channel, chosen]) => encodeMethodFrame(channel, chosen)) },
  {
    weight: 5,
    arbitrary: fc.tuple(fc.constantFrom(...channels), fc.constantFrom('', 'amq.topic', exchange), routingKey, basicProperties, bytesOf(32))
      .map(([channel, to, key, properties, body]) => publicationFrames(channel, to, key, properties, body)),
  },
  { weight: 1, arbitrary: fc.constantFrom(...channels).map(reopen) },
);

/** A session of 1 to `maxSteps` steps after the common start, as one buffer. */
export function sessionBytes(maxSteps: number): fc.Arbitrary<{ readonly bytes: Buffer; readonly steps: number }> {
  return fc.array(step, { minLength: 1, maxLength: maxSteps, size: 'max' })
    .map((steps) => ({ bytes: Buffer.concat([start, ...steps]), steps: steps.length }));
}
