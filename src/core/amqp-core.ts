/**
 * AmqpCore: exchanges, queues, bindings, publish, consume and settle, turned
 * into records (for what is durable) and runtime queue operations.
 *
 * What is durable follows the protocol: a durable exchange or queue is
 * recorded, a binding is recorded when both ends are durable, a message is
 * recorded for each durable queue it reaches when it is persistent
 * (delivery_mode=2). Everything else lives in memory and is gone after a
 * restart, as the client asked by not saying "durable".
 */
import { randomBytes } from 'node:crypto';
import type { BrokerState } from '../projections/state.js';
import {
  BrokerError, type AmqpConsumer, type AmqpCore, type AmqpMessage, type AmqpPublishResult, type DeclareQueueResult, type Durable,
  type ExchangeKind, type QueueDelivery, type TransactionOperation,
} from './api.js';
import {
  bindingArgumentsOf, defaultExchange, exchangeDestination, ExchangeRuntime, queueDestination, supportedExchangeTypes, type Destination,
} from './amqp-exchange.js';
import { alternateExchangeOf, bindBody, checkEquivalentExchange } from './exchange-arguments.js';
import { routeThroughExchanges } from './exchange-routing.js';
import type { FieldTable } from '../protocols/amqp/codec/index.js';
import { amqpMessageOf, QueueRuntime, queuesAccepting, type QueueEntry } from './amqp-queue.js';
import { isDurableEntry } from './destination-runtime.js';
import { record, type PendingRecord } from './committer.js';
import { deadLetter, deadLetterExchangeOf, endWithoutCopy } from './dead-letter.js';
import { expirationMsOf, hasExpiration, HeadExpiry } from './message-expiry.js';
import { QueueLeases } from './queue-lease.js';
import type { Timers } from './timers.js';
import { EntryFlag, type EntryView } from '../projections/entry-queue.js';
import { publish, type PublishContext } from './publish.js';
import { checkEquivalentArguments, checkQuorumProperties, queueArgumentsOf } from './queue-arguments.js';
import { withDeliveryCount } from './delivery-count.js';
import { DirectReplies, replyToQueue } from './direct-reply-to.js';
import type { SessionRuntime } from './mqtt-sessions.js';
import { swapSeparators } from './mqtt-sessions.js';
import type { Qos } from './api.js';

export interface AmqpCoreContext extends PublishContext {
  readonly state: BrokerState;
  readonly exchanges: Map<string, ExchangeRuntime>;
  readonly queues: Map<string, QueueRuntime>;
  /** What expires messages and unused queues (the clock is the committer's). */
  readonly timers: Timers;
  /** MQTT sessions subscribed to this topic (the bridge from amq.topic into MQTT). */
  bridgeSessions(mqttTopic: string): ReadonlyMap<SessionRuntime, Qos>;
}

const noSessions: ReadonlyMap<SessionRuntime, Qos> = new Map();
const unrouted: AmqpPublishResult = { routed: false, durable: undefined, rejected: false };

/** A queue's head, read but not taken. */
interface Head {
  readonly ref: EntryView<AmqpMessage>;
  readonly message: AmqpMessage;
}

function entryOf(head: Head): QueueEntry {
  const { ref, message } = head;
  // A literal, not a spread of ref: views come in two shapes, and spreading them was most of a delivery's CPU time.
  const { seq, lsn, size, deliveries, flags, held } = ref;
  return { seq, lsn, size, deliveries, flags, held, durable: isDurableEntry(ref), redelivered: (flags & EntryFlag.redelivered) !== 0, message };
}

export class AmqpCoreImpl implements AmqpCore {
  private readonly expiry: HeadExpiry;
  private readonly leases: QueueLeases;
  private readonly replies = new DirectReplies();

  constructor(private readonly context: AmqpCoreContext) {
    const now = (): number => context.committer.now();
    this.expiry = new HeadExpiry(context.timers, now, (queue) => {
      const head = this.readHead(queue);
      return head === undefined || head instanceof Error ? undefined : { seq: head.ref.seq, message: head.message };
    }, (queue) => this.expireDue(queue));
    this.leases = new QueueLeases(context.timers, (queue) => {
      if (this.context.queues.get(queue.name) === queue) this.removeQueue(queue);
    });
  }

  /** After start-up: recovered queues may hold messages with a TTL, and their x-expires leases start now. */
  recovered(): void {
    for (const queue of this.context.queues.values()) {
      this.expiry.watch(queue);
      this.expiry.arm(queue);
      this.leases.renew(queue);
    }
  }

  declareExchange(name: string, type: string, options: { passive: boolean; durable: boolean; autoDelete: boolean; internal: boolean; arguments: Record<string, unknown> }): Durable {
    const existing = this.context.exchanges.get(name);
    if (options.passive) {
      if (!existing) throw new BrokerError(404, `NOT_FOUND - no exchange '${name}' in vhost '/'`);
      return undefined;
    }
    // RabbitMQ closes the connection for a type it does not know (command_invalid).
    if (!(supportedExchangeTypes as readonly string[]).includes(type)) {
      throw new BrokerError(503, `COMMAND_INVALID - unknown exchange type '${type}' (Cairn knows ${supportedExchangeTypes.join(', ')})`, 'connection');
    }
    const alternateExchange = alternateExchangeOf(options.arguments, name);
    if (existing) {
      checkEquivalentExchange(existing, { type, durable: options.durable, autoDelete: options.autoDelete, internal: options.internal, alternateExchange });
      return undefined;
    }
    if (name.startsWith('amq.')) throw new BrokerError(403, `ACCESS_REFUSED - exchange name '${name}' contains reserved prefix 'amq.*'`);
    const exchange = new ExchangeRuntime(name, type as ExchangeKind, {
      durable: options.durable, autoDelete: options.autoDelete, builtIn: false, internal: options.internal, alternateExchange,
    });
    this.context.exchanges.set(name, exchange);
    if (!options.durable) return undefined;
    return this.context.committer.commit([record('exchange', {
      n: name, op: 'declare', type: exchange.type, autoDelete: options.autoDelete,
      ...(options.internal ? { internal: true } : {}), ...(alternateExchange === undefined ? {} : { ae: alternateExchange }),
    })]);
  }

  deleteExchange(name: string, options: { ifUnused: boolean }): Durable {
    const exchange = this.context.exchanges.get(name);
    // RabbitMQ answers delete-ok for an exchange that is already gone (idempotent clean-up).
    if (!exchange) return undefined;
    if (exchange.builtIn) throw new BrokerError(403, `ACCESS_REFUSED - operation not permitted on the built-in exchange '${name || 'amq.default'}'`);
    if (options.ifUnused && (exchange.bindingCount > 0 || this.isDestination(name))) throw new BrokerError(406, `PRECONDITION_FAILED - exchange '${name}' in vhost '/' in use`);
    this.context.exchanges.delete(name);
    // Its bindings as a destination go with it (the projection drops the durable ones on the delete record).
    const asDestination = exchangeDestination(name);
    const sources: ExchangeRuntime[] = [];
    for (const source of this.context.exchanges.values()) {
      const before = source.bindingCount;
      source.unbindDestination(asDestination);
      if (source.bindingCount < before) sources.push(source);
    }
    const durable = exchange.durable ? this.context.committer.commit([record('exchange', { n: name, op: 'delete' })]) : undefined;
    for (const source of sources) this.autoDeleteUnused(source);
    return durable;
  }

  declareQueue(requested: string, options: { passive: boolean; durable: boolean; exclusive: boolean; autoDelete: boolean; arguments: Record<string, unknown>; owner: string }): DeclareQueueResult {
    const name = requested === '' ? `amq.gen-${randomBytes(16).toString('base64url')}` : requested;
    const existing = this.context.queues.get(name);
    if (existing) this.checkOwner(existing, options.owner);
    if (options.passive) {
      if (!existing && this.replies.exists(name)) return { queue: name, messageCount: 0, consumerCount: 0, durable: undefined };
      if (!existing) throw new BrokerError(404, `NOT_FOUND - no queue '${name}' in vhost '/'`);
      return { queue: name, messageCount: existing.readyCount, consumerCount: existing.consumers.length, durable: undefined };
    }
    const args = queueArgumentsOf(options.arguments, name);
    checkQuorumProperties(args, name, options);
    if (existing) {
      checkEquivalentArguments(existing.queueArguments, args, name);
      for (const [flag, wanted, actual] of [['durable', options.durable, existing.durable], ['exclusive', options.exclusive, existing.exclusiveOwner !== undefined], ['auto_delete', options.autoDelete, existing.autoDelete]] as const) {
        if (wanted !== actual) throw new BrokerError(406, `PRECONDITION_FAILED - inequivalent arg '${flag}' for queue '${name}' in vhost '/': received '${wanted}' but current is '${actual}'`);
      }
      this.leases.renew(existing);
      return { queue: name, messageCount: existing.readyCount, consumerCount: existing.consumers.length, durable: undefined };
    }
    if (requested.startsWith('amq.')) throw new BrokerError(403, `ACCESS_REFUSED - queue name '${name}' contains reserved prefix 'amq.*'`);
    // Exclusive queues die with their connection, so they are never worth logging.
    const durable = options.durable && !options.exclusive;
    let commit: Durable;
    if (durable) commit = this.context.committer.commit([record('queue', { n: name, op: 'declare', autoDelete: options.autoDelete, ...(args === undefined ? {} : { a: args }) })]);
    const queue = new QueueRuntime(name, durable, options.autoDelete, options.exclusive ? options.owner : undefined, durable ? this.context.state.queues.get(name) : undefined, args);
    this.context.queues.set(name, queue);
    this.context.exchanges.get(defaultExchange)?.bind(queueDestination(name), name);
    this.leases.renew(queue);
    return { queue: name, messageCount: 0, consumerCount: 0, durable: commit };
  }

  deleteQueue(name: string, options: { ifUnused: boolean; ifEmpty: boolean; owner: string }): { messageCount: number; durable: Durable } {
    const queue = this.context.queues.get(name);
    // RabbitMQ answers delete-ok with 0 for a queue that is already gone; clients rely on that for idempotent clean-up.
    if (!queue) return { messageCount: 0, durable: undefined };
    this.checkOwner(queue, options.owner);
    if (options.ifUnused && queue.consumers.length > 0) throw new BrokerError(406, `PRECONDITION_FAILED - queue '${name}' in vhost '/' in use`);
    if (options.ifEmpty && queue.readyCount > 0) throw new BrokerError(406, `PRECONDITION_FAILED - queue '${name}' in vhost '/' is not empty`);
    const messageCount = queue.readyCount;
    return { messageCount, durable: this.removeQueue(queue) };
  }

  purgeQueue(name: string, owner: string): { messageCount: number; durable: Durable } {
    const queue = this.requireQueue(name, owner);
    const purged = queue.ready.clear();
    this.expiry.forget(queue);
    const durableSeqs = purged.filter(isDurableEntry).map((entry) => entry.seq);
    const durable = durableSeqs.length > 0 ? this.context.committer.commit([record('drop', { q: name, s: durableSeqs, why: 'purge' })]) : undefined;
    return { messageCount: purged.length, durable };
  }

  bindQueue(queueName: string, exchangeName: string, routingKey: string, owner: string, args?: FieldTable): Durable {
    const queue = this.requireQueue(queueName, owner);
    return this.bind(this.bindingExchange(exchangeName), queueDestination(queueName), queue.durable, routingKey, args);
  }

  unbindQueue(queueName: string, exchangeName: string, routingKey: string, owner: string, args?: FieldTable): Durable {
    const queue = this.requireQueue(queueName, owner);
    return this.unbind(this.bindingExchange(exchangeName), queueDestination(queueName), queue.durable, routingKey, args);
  }

  bindExchange(destinationName: string, sourceName: string, routingKey: string, args?: FieldTable): Durable {
    const destination = this.bindingExchange(destinationName);
    return this.bind(this.bindingExchange(sourceName), exchangeDestination(destinationName), destination.durable, routingKey, args);
  }

  unbindExchange(destinationName: string, sourceName: string, routingKey: string, args?: FieldTable): Durable {
    const destination = this.bindingExchange(destinationName);
    return this.unbind(this.bindingExchange(sourceName), exchangeDestination(destinationName), destination.durable, routingKey, args);
  }

  /** A binding is recorded when both of its ends are durable, as RabbitMQ makes it durable. */
  private bind(source: ExchangeRuntime, destination: Destination, destinationDurable: boolean, routingKey: string, args: FieldTable | undefined): Durable {
    const bindingArguments = bindingArgumentsOf(args ?? {});
    if (!source.bind(destination, routingKey, bindingArguments) || !(destinationDurable && source.durable)) return undefined;
    return this.context.committer.commit([record('bind', bindBody('bind', source.name, destination, routingKey, bindingArguments))]);
  }

  private unbind(source: ExchangeRuntime, destination: Destination, destinationDurable: boolean, routingKey: string, args: FieldTable | undefined): Durable {
    const bindingArguments = bindingArgumentsOf(args ?? {});
    if (!source.unbind(destination, routingKey, bindingArguments)) return undefined;
    const durable = destinationDurable && source.durable
      ? this.context.committer.commit([record('bind', bindBody('unbind', source.name, destination, routingKey, bindingArguments))])
      : undefined;
    return this.autoDeleteUnused(source) ?? durable;
  }

  /** An auto-delete exchange goes when its last binding (as a source) does. */
  private autoDeleteUnused(exchange: ExchangeRuntime): Durable {
    if (!exchange.autoDelete || exchange.bindingCount > 0 || this.context.exchanges.get(exchange.name) !== exchange) return undefined;
    return this.deleteExchange(exchange.name, { ifUnused: false });
  }

  private isDestination(exchangeName: string): boolean {
    const destination = exchangeDestination(exchangeName);
    for (const source of this.context.exchanges.values()) if (source.bindings().some((binding) => binding.destination === destination)) return true;
    return false;
  }

  /** An MQTT publish with an expiry crosses into this queue (the bridge): its head may expire. */
  watchExpiry(queue: QueueRuntime): void {
    this.expiry.watch(queue);
  }

  checkPublish(message: AmqpMessage): void {
    this.publishingExchange(message);
  }

  commitTransaction(operations: readonly TransactionOperation[]): { durable: Durable; published: readonly AmqpPublishResult[] } {
    const published: AmqpPublishResult[] = [];
    const { committer } = this.context;
    committer.beginGroup();
    let durable: Durable;
    try {
      for (const operation of operations) {
        if (operation.kind === 'settle') this.settle(operation.delivery, operation.outcome);
        else if (this.wouldPublish(operation.message)) published.push(this.publish(operation.message, operation));
        else published.push(unrouted);
      }
    } finally {
      // Also after an unexpected error: the records already made are in the live state, so the group is closed with them.
      durable = committer.endGroup();
    }
    return { durable, published };
  }

  /** Whether `publish` would accept the message now (it was checked when the client sent it; the exchange may have gone since). */
  private wouldPublish(message: AmqpMessage): boolean {
    try {
      this.publishingExchange(message);
      return true;
    } catch (error) {
      if (error instanceof BrokerError) return false;
      throw error;
    }
  }

  /** The exchange a publish goes to, and whether the message may go there: 404, 403 internal, 406 bad expiration. */
  private publishingExchange(message: AmqpMessage): { exchange: ExchangeRuntime; expiring: boolean } {
    const exchange = this.context.exchanges.get(message.exchange);
    if (!exchange) throw new BrokerError(404, `NOT_FOUND - no exchange '${message.exchange}' in vhost '/'`);
    if (exchange.internal) throw new BrokerError(403, `ACCESS_REFUSED - cannot publish to internal exchange '${message.exchange}' in vhost '/'`);
    // Checked before routing: a bad expiration is a channel error, whatever the queues [RabbitMQ].
    const expiring = hasExpiration(message.properties) && expirationMsOf(message.properties) !== undefined;
    return { exchange, expiring };
  }

  publish(message: AmqpMessage, options: { persistent: boolean; from: string }): AmqpPublishResult {
    if (DirectReplies.isReply(message.exchange, message.routingKey)) return this.reply(message);
    const { exchange, expiring } = this.publishingExchange(message);
    const routed = routeThroughExchanges(this.context.exchanges, exchange, message.routingKey, message.properties);
    const queues: QueueRuntime[] = [];
    for (const name of routed.queues) {
      const queue = this.context.queues.get(name);
      if (queue) queues.push(queue);
    }
    // The bridge: amq.topic (published to, or reached through exchange bindings) also reaches MQTT subscribers, with '.' ⇄ '/' swapped.
    const bridged = routed.visited.has('amq.topic');
    const sessions = bridged ? this.context.bridgeSessions(swapSeparators(message.routingKey)) : noSessions;
    const groups = bridged ? this.context.shared.match(swapSeparators(message.routingKey)) : [];
    this.context.observer.messageIn('amqp');
    if (queues.length === 0 && sessions.size === 0 && groups.length === 0) return { routed: false, durable: undefined, rejected: false };
    // x-overflow = reject-publish: a full queue refuses the message; the others still take it (as RabbitMQ).
    const accepting = queuesAccepting(queues, message.body.byteLength);
    const rejected = accepting.length < queues.length;
    if (expiring) for (const queue of accepting) this.expiry.watch(queue);
    const durable = accepting.length === 0 && sessions.size === 0 && groups.length === 0 ? undefined : publish(this.context, {
      topic: message.routingKey, exchange: message.exchange, payload: message.body, properties: message.properties,
      qos: options.persistent ? 1 : 0, persistent: options.persistent, from: options.from, sessions, queues: accepting,
      ...(groups.length > 0 ? { groups } : {}),
    });
    if (rejected) this.deadLetterRefused(queues, accepting, message);
    return { routed: true, durable, rejected };
  }

  consume(queueName: string, consumer: AmqpConsumer, options: { exclusive: boolean; owner: string }): void {
    const queue = this.requireQueue(queueName, options.owner);
    if (queue.exclusiveConsumer) throw new BrokerError(403, `ACCESS_REFUSED - queue '${queueName}' in vhost '/' in exclusive use`);
    if (options.exclusive && queue.consumers.length > 0) throw new BrokerError(403, `ACCESS_REFUSED - queue '${queueName}' in vhost '/' in use, cannot consume exclusively`);
    queue.addConsumer(consumer);
    queue.hadConsumer = true;
    this.leases.end(queue);
    if (options.exclusive) queue.exclusiveConsumer = consumer;
    this.dispatch(queueName);
  }

  consumeReplies(consumer: AmqpConsumer): string {
    if (!consumer.noAck) throw new BrokerError(406, 'PRECONDITION_FAILED - reply consumer cannot acknowledge');
    return this.replies.register(consumer);
  }

  /** A reply to a direct reply-to consumer: straight to it, no queue, no record. */
  private reply(message: AmqpMessage): AmqpPublishResult {
    this.context.observer.messageIn('amqp');
    const routed = this.replies.deliver(message);
    if (routed) this.context.observer.messageOut('amqp');
    return { routed, durable: undefined, rejected: false };
  }

  cancel(queueName: string, consumer: AmqpConsumer): void {
    if (queueName === replyToQueue) return this.replies.unregister(consumer);
    const queue = this.context.queues.get(queueName);
    if (!queue?.removeConsumer(consumer)) return;
    if (queue.autoDelete && queue.consumers.length === 0 && queue.hadConsumer) return void this.removeQueue(queue);
    this.leases.renew(queue);
    // Another consumer may take over (x-single-active-consumer), or take what this one's priority held.
    this.dispatchQueue(queue);
  }

  get(queueName: string, options: { noAck: boolean; owner: string }): { delivery: QueueDelivery | undefined; messageCount: number } {
    const queue = this.requireQueue(queueName, options.owner);
    this.leases.renew(queue);
    // A message that cannot be read stays queued; the error closes the asking connection (541).
    const entry = this.takeReady(queue);
    this.expiry.arm(queue);
    if (entry instanceof Error) throw entry;
    if (!entry) return { delivery: undefined, messageCount: 0 };
    const durable = this.recordDelivery(queue, entry);
    this.context.observer.messageOut('amqp');
    const delivery = queue.deliveryOf(entry, durable);
    if (options.noAck) this.finish(queue, entry.seq, entry.durable);
    else queue.track(entry);
    return { delivery, messageCount: queue.readyCount };
  }

  settle(delivery: QueueDelivery, outcome: 'ack' | 'reject' | 'requeue'): void {
    const queue = this.context.queues.get(delivery.queue);
    const entry = queue?.unacked.get(delivery.seq);
    // The queue was deleted meanwhile (perhaps redeclared, reusing seqs): nothing left to settle.
    if (!queue || !entry || entry.message !== delivery.message) return;
    queue.settle(delivery.seq);
    if (outcome === 'requeue' && queue.overDeliveryLimit(entry.deliveries + 1)) {
      // RabbitMQ decides on return: a message back past its limit dies now, not at its next turn.
      this.kill(queue, entry, 'delivery_limit');
    } else if (outcome === 'requeue') {
      queue.requeue(entry);
      this.dispatch(queue.name);
    } else if (outcome === 'reject' && deadLetterExchangeOf(queue) !== undefined) {
      deadLetter(this.context, queue, entry, 'rejected');
    } else {
      this.finish(queue, entry.seq, entry.durable);
    }
  }

  dispatch(queueName: string): void {
    const queue = this.context.queues.get(queueName);
    if (queue) this.dispatchQueue(queue);
  }

  dispatchQueue(queue: QueueRuntime): void {
    while (queue.readyCount > 0) {
      const consumer = queue.nextAcceptingConsumer();
      if (!consumer) break;
      const entry = this.takeReady(queue);
      if (entry instanceof Error) return consumer.readFailed(entry);
      if (!entry) break;
      const durable = this.recordDelivery(queue, entry);
      if (consumer.noAck) this.finish(queue, entry.seq, entry.durable);
      else queue.track(entry);
      this.context.observer.messageOut('amqp');
      consumer.deliver(queue.deliveryOf(entry, durable));
    }
    // Left waiting: the head's deadline, if it has one, gets a timer.
    if (queue.readyCount > 0 && this.expiry.mayExpire(queue)) this.expiry.arm(queue);
  }

  /**
   * The head of the ready list with its message, not taken: a transient one's is held, a durable
   * one's is read from the log (or the recent-message cache). A failed read is returned for the
   * caller to close the consumer's connection with; the message stays queued.
   */
  private readHead(queue: QueueRuntime): Head | Error | undefined {
    const ref = queue.ready.first();
    return ref === undefined ? undefined : this.withMessage(ref);
  }

  private withMessage(ref: EntryView<AmqpMessage>): Head | Error {
    if (ref.held !== undefined) return { ref, message: ref.held };
    const stored = this.context.store.tryRead(ref.lsn);
    return stored instanceof Error ? stored : { ref, message: amqpMessageOf(stored) };
  }

  /**
   * The head, taken off the ready list; expired messages met on the way are expired first, and
   * messages past the delivery limit die (after a restart they come back with their counts), never
   * delivered. A redelivery in a queue that counts deliveries carries x-delivery-count.
   */
  private takeReady(queue: QueueRuntime): QueueEntry | Error | undefined {
    for (;;) {
      const head = this.readHead(queue);
      if (head === undefined || head instanceof Error) return head;
      queue.ready.take(head.ref);
      const entry = entryOf(head);
      if (this.expiry.isExpired(queue, head.message)) {
        this.kill(queue, entry, 'expired');
      } else if (queue.overDeliveryLimit(entry.deliveries)) {
        this.kill(queue, entry, 'delivery_limit');
      } else {
        return queue.countsDeliveries && entry.deliveries > 0 ? { ...entry, message: withDeliveryCount(entry.message, entry.deliveries) } : entry;
      }
    }
  }

  /**
   * A delivery of a durable entry is a deliver record (it counts the delivery). Where counts must be
   * exact the record is committed now and the delivery waits for it (the returned promise); elsewhere
   * it is coalesced and nobody waits.
   */
  private recordDelivery(queue: QueueRuntime, entry: QueueEntry): Promise<void> | undefined {
    if (!entry.durable) return undefined;
    if (queue.countsDeliveries) return this.context.committer.commit([record('deliver', { q: queue.name, s: [entry.seq] })]);
    this.context.committer.settleLater('deliver', { q: queue.name }, entry.seq);
    return undefined;
  }

  /** A head's deadline has come (its timer): expire every due message at the head, then wait for the next one. */
  private expireDue(queue: QueueRuntime): void {
    if (this.context.queues.get(queue.name) !== queue) return;
    for (;;) {
      const head = this.readHead(queue);
      if (head === undefined || head instanceof Error || !this.expiry.isExpired(queue, head.message)) break;
      queue.ready.take(head.ref);
      this.kill(queue, entryOf(head), 'expired');
    }
    this.expiry.arm(queue);
  }

  /** A message leaves its queue for `reason`: to the dead-letter exchange when there is one, else dropped. */
  private kill(queue: QueueRuntime, entry: QueueEntry, reason: 'expired' | 'delivery_limit'): void {
    if (deadLetterExchangeOf(queue) !== undefined) deadLetter(this.context, queue, entry, reason);
    else if (entry.durable) this.context.committer.commitQuietly([endWithoutCopy(queue.name, entry.seq, reason)]);
  }

  /** Ready messages a length limit pushed out of a queue with a dead-letter exchange (publish.ts): dead-lettered, reason maxlen. */
  deadLetterOverflow(queue: QueueRuntime, entries: ReadonlyArray<EntryView<AmqpMessage>>): void {
    for (const ref of entries) {
      const head = this.withMessage(ref);
      if (head instanceof Error) {
        // Unreadable (a damaged segment): it cannot be copied, so it ends as a plain drop would.
        this.context.observer.drop('queue', 1);
        if (isDurableEntry(ref)) this.context.committer.commitQuietly([endWithoutCopy(queue.name, ref.seq, 'maxlen')]);
      } else {
        deadLetter(this.context, queue, entryOf(head), 'maxlen');
      }
    }
  }

  /** x-overflow = reject-publish-dlx: a full queue refuses the message and dead-letters it (it never entered the queue). */
  private deadLetterRefused(queues: readonly QueueRuntime[], accepting: readonly QueueRuntime[], message: AmqpMessage): void {
    for (const queue of queues) {
      if (accepting.includes(queue) || queue.queueArguments?.['x-overflow'] !== 'reject-publish-dlx' || deadLetterExchangeOf(queue) === undefined) continue;
      deadLetter(this.context, queue, { seq: 0, durable: false, message }, 'maxlen');
    }
  }

  connectionClosed(owner: string): void {
    for (const queue of [...this.context.queues.values()]) {
      if (queue.exclusiveOwner === owner) this.removeQueue(queue);
    }
  }

  private finish(queue: QueueRuntime, seq: number, durable: boolean): void {
    if (durable) this.context.committer.settleLater('ack', { q: queue.name }, seq);
  }

  private removeQueue(queue: QueueRuntime): Durable {
    this.context.queues.delete(queue.name);
    this.expiry.forget(queue);
    this.leases.end(queue);
    for (const exchange of this.context.exchanges.values()) exchange.unbindDestination(queueDestination(queue.name));
    for (const consumer of [...queue.consumers]) consumer.cancelledByBroker();
    queue.release();
    if (!queue.durable) return undefined;
    return this.context.committer.commit([record('queue', { n: queue.name, op: 'delete' })] as PendingRecord[]);
  }

  private requireQueue(name: string, owner: string): QueueRuntime {
    const queue = this.context.queues.get(name);
    if (!queue) throw new BrokerError(404, `NOT_FOUND - no queue '${name}' in vhost '/'`);
    this.checkOwner(queue, owner);
    return queue;
  }

  private checkOwner(queue: QueueRuntime, owner: string): void {
    if (queue.exclusiveOwner !== undefined && queue.exclusiveOwner !== owner) {
      throw new BrokerError(405, `RESOURCE_LOCKED - cannot obtain exclusive access to locked queue '${queue.name}' in vhost '/'`);
    }
  }

  /** Either end of a binding that is an exchange: it must exist and not be the default exchange. */
  private bindingExchange(exchangeName: string): ExchangeRuntime {
    const exchange = this.context.exchanges.get(exchangeName);
    if (!exchange) throw new BrokerError(404, `NOT_FOUND - no exchange '${exchangeName}' in vhost '/'`);
    if (exchangeName === defaultExchange) throw new BrokerError(403, "ACCESS_REFUSED - operation not permitted on the default exchange");
    return exchange;
  }
}

