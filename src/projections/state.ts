/**
 * The broker's durable state: what replaying the log produces.
 *
 * Only what must survive a restart lives here (persistent MQTT sessions,
 * retained values, durable exchanges, queues and bindings, the messages waiting
 * in them, document collections). Live connections, clean sessions, transient
 * queues and consumers belong to the broker's runtime, never to this state.
 *
 * Queued messages are references (entry-queue.ts): the LSN of their msg
 * record and a few numbers, never the payload, which stays in the log and is
 * read back on delivery. Within a destination, seq order is LSN order.
 */
import { EntryQueue } from './entry-queue.js';
import type { ExchangeType, QueueArguments } from './records.js';

/** A message as delivered: a msg record read back (or a transient message, never logged). */
/**
 * MQTT 5 PUBLISH properties a message keeps [MQTT-3.3.2.3]. `expiresAt` is
 * absolute (ms since the epoch): the publish's Message Expiry Interval added
 * to the broker's clock when it was accepted.
 */
export interface MessageProperties {
  readonly payloadUtf8?: true;
  readonly expiresAt?: number;
  readonly contentType?: string;
  readonly responseTopic?: string;
  readonly correlationData?: Uint8Array;
  readonly userProperties?: ReadonlyArray<readonly [name: string, value: string]>;
}

/**
 * An MQTT 5 subscription's options [MQTT-3.8.3.1] and identifier [MQTT-3.8.2.1.2], each present only
 * when not the default (No Local 0, Retain As Published 0, Retain Handling 0, no identifier).
 */
export interface SubscriptionOptions {
  readonly noLocal?: true;
  readonly retainAsPublished?: true;
  readonly retainHandling?: 1 | 2;
  readonly identifier?: number;
}

export interface StoredMessage {
  readonly lsn: number;
  readonly timestamp: number;
  readonly topic: string;
  readonly payload: Uint8Array;
  readonly exchange?: string;
  readonly properties?: Uint8Array;
  readonly qos?: 0 | 1 | 2;
  readonly from?: string;
  /** Sent with the MQTT retain flag: a retained value delivered on subscribe. */
  readonly retain?: boolean;
  /** Published with the RETAIN flag: kept on the way out to a Retain As Published subscription [MQTT-3.3.1-13]. */
  readonly publishedRetain?: true;
  /** MQTT 5 properties, when the publish had any. */
  readonly mqttProperties?: MessageProperties;
}

/** What MQTT sessions and AMQP queues have in common: one queue of references with drop-oldest bounds. */
export interface DestinationState {
  /** Entries by seq; a held message (not in the log) only for clean sessions and old snapshots. */
  readonly pending: EntryQueue<StoredMessage>;
  nextSeq: number;
  /** Messages a bound (or an ACL) dropped, never a purge. */
  dropped: number;
}

export interface SessionState extends DestinationState {
  readonly clientId: string;
  readonly subscriptions: Map<string, 0 | 1 | 2>;
  /**
   * The options of the subscriptions that have some (MQTT 5), by filter; its keys are a subset of
   * `subscriptions`' keys. Sparse on purpose: a session without options costs nothing at delivery.
   */
  readonly subscriptionOptions: Map<string, SubscriptionOptions>;
  /** Inbound QoS 2 packet ids whose PUBREL has not arrived yet. */
  readonly rx2: Set<number>;
  /** Outbound QoS 2: packet id → seq of messages PUBREC'd whose PUBCOMP is owed. */
  readonly rel: Map<number, number>;
  /** MQTT 5 Session Expiry Interval in seconds; absent: never expires (3.1.1). */
  expiryInterval?: number;
  /** Set while the client is away: when the session ends (ms since the epoch). */
  expiresAt?: number;
  /** Set while the client is away: its MQTT 5 will, waiting for its delay. */
  will?: PendingWill;
}

/**
 * A will whose MQTT 5 Will Delay Interval has not passed [MQTT-3.1.3-9]: published at `at` (ms
 * since the epoch) or when its session ends, whichever is first; never, if the client comes back
 * before. `properties` never hold `expiresAt`: a will's Message Expiry Interval
 * (`messageExpiryInterval`, seconds) counts from its publication.
 */
export interface PendingWill {
  readonly topic: string;
  readonly payload: Uint8Array;
  readonly qos: 0 | 1 | 2;
  readonly retain: boolean;
  readonly at: number;
  readonly properties?: MessageProperties;
  readonly messageExpiryInterval?: number;
}

export interface QueueState extends DestinationState {
  readonly name: string;
  readonly autoDelete: boolean;
  /** Declared x-arguments (length limits), absent when there are none. */
  readonly arguments?: QueueArguments;
}

/**
 * A shared-subscription group with at least one persistent member (MQTT 5.0 §4.8.2, offered to
 * 3.1.1 clients too): one queue for the whole group, each message consumed by one member. Named
 * by its whole `$share/{group}/{filter}`: the same group name with another filter is another
 * group. It lives as long as a persistent session is subscribed to it.
 */
export interface GroupState extends DestinationState {
  readonly name: string;
  /** Client ids of the persistent sessions subscribed to it. */
  readonly members: Set<string>;
}

export interface ExchangeState {
  readonly name: string;
  readonly type: ExchangeType;
  readonly autoDelete: boolean;
  /** Absent when false (and in snapshots written before internal exchanges). */
  readonly internal?: true;
  /** The alternate-exchange argument, when set. */
  readonly alternateExchange?: string;
}

/** To a queue (`queue`) or to an exchange (`toExchange`, exchange-to-exchange): exactly one of the two. */
export interface BindingState {
  readonly exchange: string;
  readonly queue?: string;
  readonly toExchange?: string;
  readonly routingKey: string;
  /** The binding's arguments, a field table with sorted names (absent when none). */
  readonly arguments?: Uint8Array;
}

export interface RetainedValue {
  readonly topic: string;
  readonly payload: Uint8Array;
  readonly qos: 0 | 1 | 2;
  readonly lsn: number;
  readonly timestamp: number;
  readonly mqttProperties?: MessageProperties;
}

export interface CollectionState {
  readonly name: string;
  /** Document id → LSN of its doc record: the document stays in the log (see collections.ts). */
  readonly documents: Map<number, number>;
  nextId: number;
}

export interface BrokerState {
  readonly sessions: Map<string, SessionState>;
  readonly retained: Map<string, RetainedValue>;
  readonly exchanges: Map<string, ExchangeState>;
  readonly queues: Map<string, QueueState>;
  /** Keyed by bindingKey(exchange, queue, routingKey). */
  readonly bindings: Map<string, BindingState>;
  readonly collections: Map<string, CollectionState>;
  /** Persistent shared-subscription groups by `$share/{group}/{filter}`. */
  readonly groups: Map<string, GroupState>;
  /** LSN of the last record applied (0 for the empty state). */
  lastLsn: number;
  lastTimestamp: number;
}

export function initialState(): BrokerState {
  return {
    sessions: new Map(),
    retained: new Map(),
    exchanges: new Map(),
    queues: new Map(),
    bindings: new Map(),
    collections: new Map(),
    groups: new Map(),
    lastLsn: 0,
    lastTimestamp: 0,
  };
}

/** What identifies a binding, as RabbitMQ identifies one: source, destination (queue or exchange), key and arguments. */
export function bindingKey(binding: BindingState): string {
  const destination = binding.toExchange === undefined ? `q${binding.queue ?? ''}` : `x${binding.toExchange}`;
  const args = binding.arguments === undefined ? '' : Buffer.from(binding.arguments).toString('base64');
  return `${binding.exchange}\u0000${destination}\u0000${binding.routingKey}\u0000${args}`;
}

export function newSession(clientId: string): SessionState {
  return { clientId, subscriptions: new Map(), subscriptionOptions: new Map(), pending: new EntryQueue(), nextSeq: 1, rx2: new Set(), rel: new Map(), dropped: 0 };
}

export function newQueue(name: string, autoDelete: boolean, args?: QueueArguments): QueueState {
  return { name, autoDelete, pending: new EntryQueue(), nextSeq: 1, dropped: 0, ...(args === undefined ? {} : { arguments: args }) };
}

export function newGroup(name: string): GroupState {
  return { name, members: new Set(), pending: new EntryQueue(), nextSeq: 1, dropped: 0 };
}
