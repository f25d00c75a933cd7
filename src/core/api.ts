/**
 * The broker core's API, as the protocol front ends see it.
 *
 * Protocols translate wire frames into these commands and deliveries back into
 * frames; they never touch the log. Every command that writes records returns
 * a `Durable`: a promise that resolves once those records are fsynced (the
 * moment a PUBACK, PUBREC, PUBCOMP, SUBACK or publisher confirm may be sent),
 * or `undefined` when the command wrote nothing and there is nothing to wait
 * for — callers check `if (durable)` and send at once otherwise, so a
 * transient publish costs no promise and no allocation.
 *
 * A Durable rejects only when the log has failed (a write or fsync error): the
 * broker then refuses every further durable command, and a protocol must not
 * acknowledge (AMQP: send basic.nack; MQTT: close the connection).
 */
import type { FieldTable } from '../protocols/amqp/codec/index.js';

export type Durable = Promise<void> | undefined;
export type Qos = 0 | 1 | 2;

/** Errors a command may throw for bad requests; the protocol maps `code` to its wire reply. */
export class BrokerError extends Error {
  override readonly name = 'BrokerError';
  constructor(
    /** AMQP reply code semantics: 403 access refused, 404 not found, 405 resource locked, 406 precondition failed, 503 command invalid, 530 not allowed, 540 not implemented. */
    readonly code: 403 | 404 | 405 | 406 | 503 | 530 | 540,
    message: string,
    /** Channel-level errors close the channel; connection-level ones close the connection. */
    readonly scope: 'channel' | 'connection' = 'channel',
  ) {
    super(message);
  }
}

// ───────────────────────────── MQTT ─────────────────────────────

/** MQTT 5 PUBLISH properties as the protocol sees them [MQTT-3.3.2.3]; the expiry interval is in seconds, counted from now. */
export interface MqttPublishProperties {
  readonly payloadFormatIndicator?: boolean;
  readonly messageExpiryInterval?: number;
  readonly contentType?: string;
  readonly responseTopic?: string;
  readonly correlationData?: Uint8Array;
  readonly userProperties?: ReadonlyArray<readonly [name: string, value: string]>;
}

export interface MqttOutgoingPublish {
  readonly topic: string;
  /** May be lent (a QoS 0 message kept by nothing, still the publisher's MqttIncomingPublish payload): valid only during sendPublish. */
  readonly payload: Uint8Array;
  readonly qos: Qos;
  readonly retain: boolean;
  readonly dup: boolean;
  /** Present for QoS 1 and 2. */
  readonly packetId?: number;
  /** MQTT 5 properties, the expiry as what is left of it; 3.1.1 connections ignore them. */
  readonly properties?: MqttPublishProperties | undefined;
  /** MQTT 5: the identifiers of the client's subscriptions this message is sent for [MQTT-3.3.4-4]; 3.1.1 connections ignore them. */
  readonly subscriptionIdentifiers?: readonly number[] | undefined;
}

/**
 * Whether a session's client may read a topic (the topic ACL, --acl). The core
 * asks at routing, for retained messages and again just before sending, so a
 * subscription to '#' never delivers a topic the client may not read, even
 * after the rules change. Absent: the client reads everything.
 */
export interface MqttTopicReader {
  mayRead(topic: string): boolean;
}

/** Implemented by an MQTT connection: how the core reaches the client. */
export interface MqttClientLink {
  /** Write a PUBLISH (its payload may be lent: encode it before returning). Returns false when the socket is congested; QoS 0 deliveries are then dropped, not buffered. */
  sendPublish(publish: MqttOutgoingPublish): boolean;
  /** Write a PUBREL (outbound QoS 2, after the client's PUBREC is durable, and again on reconnect). */
  sendPubrel(packetId: number): void;
  /**
   * A second CONNECT with this client id won [MQTT-3.1.4-2]: close the socket at once, without publishing the will;
   * return the will of an accepted connection, which the core publishes or drops by the new connection's terms.
   */
  takenOver(): MqttWill | undefined;
  /** A queued message could not be read back from the log (a damaged segment): log it and close this connection; the message stays queued. */
  readFailed(error: Error): void;
  /** The most QoS 1/2 deliveries the client takes unacknowledged (MQTT 5 Receive Maximum); absent: the broker's own window. */
  readonly inflightMax?: number | undefined;
}

export interface MqttIncomingPublish {
  readonly topic: string;
  /** May be lent: a view of a socket read that is reused once the call returns. The core copies it if it keeps the message. */
  readonly payload: Uint8Array;
  readonly qos: Qos;
  readonly retain: boolean;
  /** QoS 1 and 2 only. */
  readonly packetId?: number;
  /** MQTT 5 properties, stored with the message and carried to its subscribers. */
  readonly properties?: MqttPublishProperties | undefined;
}

/**
 * A connection's will, as the core gets it when the connection ends without a normal DISCONNECT [MQTT-3.1.2-8].
 * Its payload is its own, never lent: a will is kept until the connection ends.
 */
export interface MqttWill extends Omit<MqttIncomingPublish, 'packetId'> {
  /**
   * MQTT 5 Will Delay Interval in seconds [MQTT-3.1.3-9]: published when it has passed or the
   * session ends, whichever is first, and not at all if the client comes back before. Absent or 0: at once.
   */
  readonly delayInterval?: number | undefined;
}

export interface MqttPublishResult {
  /** Resolves when the message is durable for every destination that needs it: then PUBACK (QoS 1) / PUBREC (QoS 2). */
  readonly durable: Durable;
  /** QoS 2 resend of a packet id whose PUBREL has not arrived: not routed again, just PUBREC again [MQTT-4.3.3-2]. */
  readonly duplicate: boolean;
  /** Nothing took the message: no subscriber, shared group, queue or ingest route matched (MQTT 5 may say 0x10). */
  readonly noSubscribers?: boolean;
  /** A full reject-publish queue bound to amq.topic refused the message (the others took it; MQTT 5 may say 0x97). */
  readonly quotaExceeded?: boolean;
}

export interface MqttSubscribeResult {
  /** One per requested filter: the granted QoS, or 0x80 for an invalid filter. */
  readonly granted: ReadonlyArray<Qos | 0x80>;
  /** Send SUBACK only after this. */
  readonly durable: Durable;
  /** The granted filters whose Retain Handling wants the retained messages now: pass them to sendRetained after SUBACK. */
  readonly retainedFilters: readonly string[];
}

/**
 * MQTT 5 subscription options [MQTT-3.8.3.1] and Subscription Identifier [MQTT-3.8.2.1.2]; an
 * absent one is the default, which is what a 3.1.1 subscription has: No Local 0, Retain As
 * Published 0, Retain Handling 0, no identifier.
 */
export interface MqttSubscriptionOptions {
  /** Messages this client publishes are not sent back to it on this subscription [MQTT-3.8.3-3]. */
  readonly noLocal?: boolean;
  /** Forwarded messages keep the RETAIN flag they were published with [MQTT-3.3.1-13]. */
  readonly retainAsPublished?: boolean;
  /** 0: send retained messages at subscribe; 1: only if the subscription is new; 2: never [MQTT-3.3.1-9..11]. */
  readonly retainHandling?: 0 | 1 | 2;
  /** Sent back on every PUBLISH this subscription matches (1…268,435,455). */
  readonly identifier?: number;
}

export interface MqttSubscribeRequest {
  readonly filter: string;
  readonly qos: Qos;
  readonly options?: MqttSubscriptionOptions | undefined;
}

/** A connected client's session (clean or persistent). */
export interface MqttSessionHandle {
  readonly clientId: string;
  readonly persistent: boolean;
  /** Call right after CONNACK is written: resends unacknowledged PUBLISHes with DUP and owed PUBRELs, then the queue in order. */
  start(): void;
  subscribe(requests: readonly MqttSubscribeRequest[]): MqttSubscribeResult;
  /** Call after SUBACK is written, with the result's retainedFilters: delivers retained values matching them [MQTT-3.3.1-6]. */
  sendRetained(filters: readonly string[]): void;
  unsubscribe(filters: readonly string[]): Durable;
  /** Whether this session holds a subscription to exactly this filter (MQTT 5's UNSUBACK says so). */
  subscribed(filter: string): boolean;
  publish(publish: MqttIncomingPublish): MqttPublishResult;
  /** Whether an inbound QoS 2 packet id awaits its PUBREL (MQTT 5 answers a PUBREL for another with PUBCOMP 0x92). */
  awaitsRelease(packetId: number): boolean;
  /** Inbound QoS 2 PUBREL: forget the packet id; send PUBCOMP after this. */
  pubrel(packetId: number): Durable;
  /** Outbound QoS 1 acknowledged by the client. */
  puback(packetId: number): void;
  /** Outbound QoS 2 PUBREC: the core records it and then calls link.sendPubrel. */
  pubrec(packetId: number): void;
  /** Outbound QoS 2 finished. */
  pubcomp(packetId: number): void;
  /**
   * The connection is gone (graceful or not). A clean session is discarded; a
   * persistent one stays, offline, until its MQTT 5 expiry (`sessionExpiryInterval`
   * from a v5 DISCONNECT overrides the CONNECT's). `will`: the connection's will,
   * to publish now or, with a delay, when the delay passes or the session ends
   * (a delayed will is recorded with the session). Returns the durability of a
   * will published now.
   */
  detach(sessionExpiryInterval?: number, will?: MqttWill): Durable;
}

/** What an MQTT 5 CONNECT adds; absent for 3.1.1. */
export interface MqttConnectOptions {
  /** Seconds the session outlives its connection: 0 ends it with the connection, 0xFFFFFFFF never [MQTT-3.1.2-23]. */
  readonly sessionExpiryInterval?: number | undefined;
}

export interface MqttCore {
  /**
   * CONNECT accepted (authentication and client id checks are the protocol's).
   * Takes over any connection already attached to this client id. Send CONNACK
   * (with sessionPresent) after `durable`, then call `session.start()`.
   * `reader` stays with the session while it is offline, until the next connect.
   */
  connect(
    clientId: string, cleanSession: boolean, link: MqttClientLink, reader?: MqttTopicReader, options?: MqttConnectOptions,
  ): { session: MqttSessionHandle; sessionPresent: boolean; durable: Durable };
  /**
   * The broker's own retained value for a `$SYS/...` topic: sent at QoS 0 to
   * the subscribers matching it now, kept (in memory only) for those who
   * subscribe later. Never a record: it describes this process, not state that
   * must survive it.
   */
  publishSystem(topic: string, payload: Uint8Array): void;
}

// ───────────────────────────── AMQP ─────────────────────────────

export type ExchangeKind = 'direct' | 'fanout' | 'topic' | 'headers';

export interface AmqpMessage {
  readonly exchange: string;
  readonly routingKey: string;
  readonly body: Uint8Array;
  /** The content header's raw property bytes (flags + list), returned to consumers byte for byte. */
  readonly properties: Uint8Array;
  /** When it entered the queue it is read from (its msg record's timestamp): message TTLs count from it. */
  readonly publishedAt?: number;
}

export interface QueueDelivery {
  readonly queue: string;
  readonly seq: number;
  readonly message: AmqpMessage;
  readonly redelivered: boolean;
  /** Resolves when the delivery's deliver record is durable: the frame must not leave before (exact delivery counts). */
  readonly durable?: Promise<void>;
}

/** Implemented by an AMQP channel for each basic.consume. */
export interface AmqpConsumer {
  readonly tag: string;
  readonly noAck: boolean;
  /** basic.consume x-priority (absent: 0): higher priorities are served first. */
  readonly priority?: number;
  /** False when the consumer or its channel is at its prefetch limit; round robin then skips it. */
  canAccept(): boolean;
  /** Write basic.deliver (the channel assigns the delivery tag and remembers the delivery until settled). */
  deliver(delivery: QueueDelivery): void;
  /** The queue was deleted under the consumer: send basic.cancel to the client if it supports consumer_cancel_notify. */
  cancelledByBroker(): void;
  /** A queued message could not be read back from the log (a damaged segment): close the connection with the error; the message stays queued. */
  readFailed(error: Error): void;
}

export interface DeclareQueueResult {
  readonly queue: string;
  readonly messageCount: number;
  readonly consumerCount: number;
  readonly durable: Durable;
}

export interface AmqpPublishResult {
  /** False when no queue received the message (basic.return 312 NO_ROUTE if mandatory). */
  readonly routed: boolean;
  /** Resolves when the message is durable in every durable queue it reached: then the confirm. */
  readonly durable: Durable;
  /**
   * A queue it was routed to refused it (x-overflow = reject-publish, full): the confirm is basic.nack
   * whatever the other queues did. Routed stays true, so a mandatory message is not returned (as RabbitMQ).
   */
  readonly rejected: boolean;
}

/** One operation of a committed AMQP transaction, in the order the client sent it. */
export type TransactionOperation =
  | { readonly kind: 'publish'; readonly message: AmqpMessage; readonly persistent: boolean; readonly from: string }
  | { readonly kind: 'settle'; readonly delivery: QueueDelivery; readonly outcome: 'ack' | 'reject' | 'requeue' };

export interface AmqpCore {
  /**
   * Throws BrokerError: 404 passive and missing, 406 type/durability/internal/argument mismatch, 403 reserved `amq.`
   * prefix, 503 (connection) unknown type, 540 unsupported arguments. `arguments` are plain values (strings as text).
   */
  declareExchange(name: string, type: string, options: { passive: boolean; durable: boolean; autoDelete: boolean; internal: boolean; arguments: Record<string, unknown> }): Durable;
  /** A missing exchange is deleted already: no error, as RabbitMQ answers delete-ok. */
  deleteExchange(name: string, options: { ifUnused: boolean }): Durable;
  /**
   * `name` '' asks for a server-named queue. `owner` identifies the connection (for exclusive queues).
   * `arguments` are plain values (integers as numbers; queue-arguments.ts): 540 for an unsupported one,
   * 406 for a bad value or one that differs from the existing queue's.
   */
  declareQueue(name: string, options: { passive: boolean; durable: boolean; exclusive: boolean; autoDelete: boolean; arguments: Record<string, unknown>; owner: string }): DeclareQueueResult;
  deleteQueue(name: string, options: { ifUnused: boolean; ifEmpty: boolean; owner: string }): { messageCount: number; durable: Durable };
  purgeQueue(name: string, owner: string): { messageCount: number; durable: Durable };
  /** `args`: the binding's arguments (a headers exchange matches on them; 406 for a bad x-match). */
  bindQueue(queue: string, exchange: string, routingKey: string, owner: string, args?: FieldTable): Durable;
  unbindQueue(queue: string, exchange: string, routingKey: string, owner: string, args?: FieldTable): Durable;
  /** exchange.bind: messages routed by `source` also go to `destination`. 404 for a missing end, 403 for the default exchange. */
  bindExchange(destination: string, source: string, routingKey: string, args?: FieldTable): Durable;
  unbindExchange(destination: string, source: string, routingKey: string, args?: FieldTable): Durable;
  /** Throws BrokerError 404 when the exchange does not exist, 403 when it is internal. `persistent` is delivery_mode=2. */
  publish(message: AmqpMessage, options: { persistent: boolean; from: string }): AmqpPublishResult;
  /** The checks `publish` makes before routing (404 missing exchange, 403 internal, 406 bad expiration), without publishing: a transactional publish. */
  checkPublish(message: AmqpMessage): void;
  /**
   * tx.commit: the operations, in order, as one atomic group in the log (transaction-groups.ts): after a crash
   * all of it is there or none. `durable` resolves when the whole group is; `published` has one result per publish.
   * A publish whose exchange is gone (or became internal) since it was checked is unroutable.
   */
  commitTransaction(operations: readonly TransactionOperation[]): { durable: Durable; published: readonly AmqpPublishResult[] };
  /** Throws 404 missing queue, 403 exclusive queue of another connection, 405 exclusive consumer conflict. */
  consume(queue: string, consumer: AmqpConsumer, options: { exclusive: boolean; owner: string }): void;
  /** Direct reply-to: a no-ack consumer of amq.rabbitmq.reply-to; returns the name its replies are published to. */
  consumeReplies(consumer: AmqpConsumer): string;
  cancel(queue: string, consumer: AmqpConsumer): void;
  /** basic.get: the head of the queue, or undefined; `messageCount` is what remains. */
  get(queue: string, options: { noAck: boolean; owner: string }): { delivery: QueueDelivery | undefined; messageCount: number };
  /** Finish a delivery: ack (done), reject (done, not requeued), requeue (back to its place in the queue, redelivered). */
  settle(delivery: QueueDelivery, outcome: 'ack' | 'reject' | 'requeue'): void;
  /** A consumer's channel freed prefetch capacity: deliver more if the queue has ready messages. */
  dispatch(queue: string): void;
  /** The connection closed: delete its exclusive queues (auto-delete queues go when their last consumer is cancelled). */
  connectionClosed(owner: string): void;
}
