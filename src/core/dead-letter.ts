/**
 * Dead-lettering, as RabbitMQ does it: a message rejected or nacked without
 * requeue, expired, or pushed out by a length limit leaves its queue and is
 * republished to the queue's x-dead-letter-exchange, with the
 * x-dead-letter-routing-key or its own routing key, and with x-death telling
 * where and why it died (dead-letter-headers.ts).
 *
 * Once in the log: the copy's msg record names the entry it replaces (`d`),
 * and applying it removes that entry. The death and the new message are one
 * record, so a crash leaves either the old entry (it dies again after the
 * restart, once) or the new message, never both and never neither. When no
 * durable queue takes the copy, the entry's end is the record it would have
 * had without a dead-letter exchange: an ack (rejected), a drop (expired,
 * delivery_limit, or `bound` for maxlen).
 *
 * A dead-letter exchange that does not exist drops the message, as RabbitMQ
 * does; so does a cycle with no rejection in it (closesCycle).
 */
import { deliveryModeOf } from '../protocols/amqp/codec/index.js';
import type { DeathReason } from '../projections/records.js';
import type { AmqpMessage, Qos } from './api.js';
import type { ExchangeRuntime } from './amqp-exchange.js';
import { queuesAccepting, type QueueRuntime } from './amqp-queue.js';
import { record, type PendingRecord } from './committer.js';
import { closesCycle, propertiesAfterDeath } from './dead-letter-headers.js';
import { routeThroughExchanges } from './exchange-routing.js';
import { publish, type PublishContext } from './publish.js';
import type { SessionRuntime } from './mqtt-sessions.js';

export interface DeadLetterContext extends PublishContext {
  readonly exchanges: ReadonlyMap<string, ExchangeRuntime>;
  readonly queues: ReadonlyMap<string, QueueRuntime>;
}

/** A message leaving its queue. `seq` 0 and `durable` false: one that never entered it (reject-publish-dlx). */
export interface DyingMessage {
  readonly seq: number;
  /** Its entry is in the log: its end must be recorded. */
  readonly durable: boolean;
  readonly message: AmqpMessage;
}

const noSessions: ReadonlyMap<SessionRuntime, Qos> = new Map();

export function deadLetterExchangeOf(queue: QueueRuntime): string | undefined {
  return queue.queueArguments?.['x-dead-letter-exchange'];
}

/** Republishes `dying` to its queue's dead-letter exchange (which the queue must have). */
export function deadLetter(context: DeadLetterContext, queue: QueueRuntime, dying: DyingMessage, reason: DeathReason): void {
  const exchangeName = deadLetterExchangeOf(queue)!;
  const original = dying.message;
  const { properties, deaths } = propertiesAfterDeath(original.properties, {
    queue: queue.name, reason, exchange: original.exchange, routingKey: original.routingKey, time: context.committer.now(),
  });
  const routingKey = queue.queueArguments?.['x-dead-letter-routing-key'] ?? original.routingKey;
  const targets: QueueRuntime[] = [];
  const exchange = context.exchanges.get(exchangeName);
  if (exchange !== undefined) {
    for (const name of routeThroughExchanges(context.exchanges, exchange, routingKey, properties).queues) {
      const target = context.queues.get(name);
      if (target !== undefined && !closesCycle(deaths, reason, name)) targets.push(target);
    }
  }
  const persistent = deliveryModeOf(Buffer.from(properties.buffer, properties.byteOffset, properties.byteLength)) === 2;
  // The entry's deliver and ack records made earlier in this tick go before its death.
  context.committer.flushSettled();
  publish(context, {
    topic: routingKey, exchange: exchangeName, payload: original.body, properties, qos: persistent ? 1 : 0, persistent,
    from: `dead-lettered from queue ${queue.name}`, sessions: noSessions, queues: queuesAccepting(targets, original.body.byteLength),
    ...(dying.durable ? { deadLettered: { entry: [queue.name, dying.seq, reason] as const, otherwise: endWithoutCopy(queue.name, dying.seq, reason) } } : {}),
  });
}

/** How a dead-lettered entry ends when no durable queue takes its copy: as it would have without a dead-letter exchange. */
export function endWithoutCopy(queue: string, seq: number, reason: DeathReason): PendingRecord {
  if (reason === 'rejected') return record('ack', { q: queue, s: [seq] });
  return record('drop', { q: queue, s: [seq], why: reason === 'maxlen' ? 'bound' : reason });
}
