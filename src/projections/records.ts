/**
 * The record vocabulary: every durable broker action, in one place.
 *
 * The log stores (kind, timestamp, MessagePack body) and knows nothing of what
 * a kind means; this file gives each kind its number, its body shape and its
 * meaning. Bodies use short field names because they are written for every
 * message. A record is written exactly when the state it changes must survive a
 * restart: clean sessions, transient queues and non-persistent messages never
 * appear here.
 *
 * Destinations are either a persistent MQTT session (by client id) or a durable
 * AMQP queue (by name); each keeps its own sequence numbers (`seq`), so a
 * message is identified per destination by (destination, seq) and globally by
 * the LSN of its `msg` record.
 *
 * Kind numbers are part of the on-disk format: never renumber, only add.
 */

export const RecordKind = {
  /** A persistent MQTT session created or resumed (`op: 'open'`), gone offline with an expiry or a delayed will (`op: 'offline'`), or discarded (`op: 'end'`). */
  session: 1,
  /** A persistent session's subscription added or its QoS changed; a `$share/{group}/{filter}` one also joins that shared group. */
  sub: 2,
  /** A persistent session's subscription removed. */
  unsub: 3,
  /** A message accepted for durable destinations: payload stored once, with its destinations and their seqs. */
  msg: 4,
  /** Destinations finished with messages: MQTT PUBACK, AMQP basic.ack, reject/nack without requeue. */
  ack: 5,
  /** Messages discarded without being consumed: a bound dropped the oldest, or a purge. */
  drop: 6,
  /** A retained value set for a topic, or cleared (empty payload). */
  retain: 7,
  /** Inbound QoS 2: packet id seen from a persistent session's client (dedup until PUBREL); `clear` on PUBREL. */
  rx2: 8,
  /** Outbound QoS 2: PUBREC received for (client, seq), PUBREL/PUBCOMP owed; `clear` on PUBCOMP. */
  rel: 9,
  /** A durable AMQP exchange declared or deleted. */
  exchange: 10,
  /** A durable AMQP queue declared or deleted. */
  queue: 11,
  /** A binding from a durable exchange to a durable queue, or to a durable exchange, added or removed. */
  bind: 12,
  /** A document added to a collection by the ingest bridge. */
  doc: 13,
  /**
   * A persistent message handed to a consumer or subscriber: it gives trace, the redelivered flag and the
   * delivery count. Not awaited, except in an AMQP queue that counts deliveries (x-delivery-limit, quorum):
   * there the delivery leaves only once its deliver record is durable.
   */
  deliver: 14,
  /** The bounds of an AMQP transaction's group of records: begin, commit, or abort of a group a crash tore (transaction-groups.ts). */
  tx: 15,
} as const;

export type RecordKindName = keyof typeof RecordKind;
export type RecordKindNumber = (typeof RecordKind)[RecordKindName];

const kindNames = new Map<number, RecordKindName>(
  Object.entries(RecordKind).map(([name, kind]) => [kind, name as RecordKindName]),
);

export function kindName(kind: number): RecordKindName | undefined {
  return kindNames.get(kind);
}

/**
 * A destination of a message: a persistent MQTT session (`c`), a durable AMQP queue (`q`), or a
 * persistent MQTT shared-subscription group (`g`, named by its whole `$share/{group}/{filter}`).
 */
export type DestinationRef = { readonly c: string } | { readonly q: string } | { readonly g: string };

/**
 * `open`: a persistent session created or resumed; `e` is its MQTT 5 Session
 * Expiry Interval in seconds (absent: it never expires, as 3.1.1's
 * clean_session=0 and every record before MQTT 5). An open also cancels a
 * pending will (a new connection before the will delay passed [MQTT-3.1.2-8]).
 * `offline` (added with MQTT 5): its client left; the record states the whole
 * offline state and replaces an earlier one: it expires at `until` (ms since
 * the epoch; absent: never) unless the client comes back first, and `w`
 * (optional, added with the will delay) is its will waiting for its delay. An
 * `offline` without `w` after one with it says the will was published (it
 * follows that publication's records in the same commit). `end`: discarded (a
 * clean start over it, its expiry, or an expiry of 0 at disconnect) — written
 * once, so a session ends exactly once however often the broker restarts; a
 * pending will is published in the commit that ends the session.
 */
export interface SessionBody { readonly c: string; readonly op: 'open' | 'end' | 'offline'; readonly e?: number; readonly until?: number; readonly w?: WillBody }

/**
 * A will waiting for its MQTT 5 Will Delay Interval [MQTT-3.1.3-9]: `t`
 * topic, `p` payload, `qos`, `r` retain, `at` when it is published (ms since
 * the epoch) unless the session ends first or its client comes back, `m` its
 * properties as a message's (never `ea`), `ei` its Message Expiry Interval
 * in seconds, which counts from the publication, not from now.
 */
export interface WillBody {
  readonly t: string;
  readonly p: Uint8Array;
  readonly qos: 0 | 1 | 2;
  readonly r?: true;
  readonly at: number;
  readonly m?: MessagePropertiesBody;
  readonly ei?: number;
}
/**
 * A subscription. MQTT 5 subscription options (§3.8.3.1) and identifier (§3.8.2.1.2) are optional
 * fields added with them, present only when not the default, so a 3.1.1 subscription and every
 * record written before them read as defaults: `nl` No Local, `rap` Retain As Published, `rh`
 * Retain Handling 1 or 2 (absent: 0), `id` the Subscription Identifier (1…268,435,455).
 */
export interface SubBody {
  readonly c: string;
  readonly f: string;
  readonly qos: 0 | 1 | 2;
  readonly nl?: true;
  readonly rap?: true;
  readonly rh?: 1 | 2;
  readonly id?: number;
}
export interface UnsubBody { readonly c: string; readonly f: string }

/**
 * MQTT 5 PUBLISH properties stored with a message (`m` in msg and retain
 * bodies; absent for 3.1.1 publishes and in every record written before MQTT
 * 5, which therefore read as messages without properties): `pf` payload
 * format indicator 1 (UTF-8), `ea` the time it expires (ms since the epoch:
 * the broker's clock at the publish plus its Message Expiry Interval), `ct`
 * content type, `rt` response topic, `cd` correlation data, `up` user
 * properties as [name, value] pairs in their order. Long names in code:
 * message-properties.ts.
 */
export interface MessagePropertiesBody {
  readonly pf?: 1;
  readonly ea?: number;
  readonly ct?: string;
  readonly rt?: string;
  readonly cd?: Uint8Array;
  readonly up?: ReadonlyArray<readonly [name: string, value: string]>;
}

/**
 * A message. MQTT publishes carry `t` (topic) and `qos`; AMQP publishes carry
 * `x` (exchange), `t` (routing key) and `h` (the raw content-header property
 * bytes, returned byte for byte). `s` lists [client, seq, qos] for persistent
 * sessions, `u` lists [queue, seq] for durable queues, `g` lists [group, seq, qos]
 * for persistent shared-subscription groups (absent in records written before
 * groups existed). `from` names the publisher (client id or AMQP connection)
 * for forensics.
 */
export interface MsgBody {
  readonly t: string;
  readonly p: Uint8Array;
  readonly x?: string;
  readonly h?: Uint8Array;
  readonly qos?: 0 | 1 | 2;
  readonly s?: ReadonlyArray<readonly [client: string, seq: number, qos: 1 | 2]>;
  readonly u?: ReadonlyArray<readonly [queue: string, seq: number]>;
  readonly g?: ReadonlyArray<readonly [group: string, seq: number, qos: 1 | 2]>;
  readonly from?: string;
  /** A retained value queued for a session on subscribe: delivered with the retain flag. */
  readonly r?: true;
  /** Published with the RETAIN flag (optional field added with MQTT 5's Retain As Published: absent reads as not). */
  readonly rp?: true;
  /**
   * Moved from: the LSN of the msg record this one copies, so that an old segment can be released
   * (segment-release.ts). The destinations listed already hold the message under that LSN: their
   * entries now point here; nothing is enqueued.
   */
  readonly movedFrom?: number;
  /** On a moved copy: the timestamp of the first record of this message (message TTLs count from it, not from the move). */
  readonly at?: number;
  /**
   * Dead-lettered: this message is the republication of (queue, seq) to the queue's dead-letter
   * exchange, for `why`. Applying the record also removes that entry from its queue, so the death
   * and the new copy are one record: after a crash there is either both or neither (dead-letter.ts).
   * Present only when the dying entry was itself in the log (a persistent message in a durable queue).
   */
  readonly d?: readonly [queue: string, seq: number, why: DeathReason];
  /** MQTT 5 properties (optional field added with MQTT 5). */
  readonly m?: MessagePropertiesBody;
}

/** Why a message died, in RabbitMQ's x-death words. */
export type DeathReason = 'rejected' | 'expired' | 'maxlen' | 'delivery_limit';

/** `c`, `q` or `g` names the destination; `s` lists its finished seqs. */
export type AckBody = DestinationRef & { readonly s: readonly number[] };
/** `expired`: a message whose TTL ran out at the head of its queue, with no dead-letter exchange to go to (message-expiry.ts), or an MQTT 5 message whose expiry interval passed while queued for a session. */
/** `delivery_limit`: a message taken more times than its queue's x-delivery-limit allows, with no dead-letter exchange to go to. */
export type DropBody = DestinationRef & { readonly s: readonly number[]; readonly why: 'bound' | 'purge' | 'acl' | 'expired' | 'delivery_limit' };
export type DeliverBody = DestinationRef & { readonly s: readonly number[] };

/** `m`: the MQTT 5 properties of the retained message (optional field added with MQTT 5). */
export interface RetainBody { readonly t: string; readonly p: Uint8Array; readonly qos: 0 | 1 | 2; readonly m?: MessagePropertiesBody }
export interface Rx2Body { readonly c: string; readonly id: number; readonly clear?: true }
/**
 * PUBREC for (c, s) finishes the message and opens a PUBREL obligation under packet id `id`. With `g`
 * (absent in records written before shared subscriptions), `s` is a seq of that shared group (a shared
 * delivery to client c): the message leaves the group, and the PUBREL obligation is the session's.
 */
export interface RelBody { readonly c: string; readonly id: number; readonly s?: number; readonly clear?: true; readonly g?: string }

export type ExchangeType = 'direct' | 'fanout' | 'topic' | 'headers';
/**
 * `internal` (only other exchanges route to it) and `ae` (its alternate-exchange argument) are absent
 * when unset, and in every record written before they existed.
 */
export interface ExchangeBody {
  readonly n: string;
  readonly op: 'declare' | 'delete';
  readonly type?: ExchangeType;
  readonly autoDelete?: boolean;
  readonly internal?: true;
  readonly ae?: string;
}
/**
 * The x-arguments a queue was declared with, validated, under their AMQP names (what RabbitMQ's
 * management API shows); anything not listed here is refused at declare (queue-arguments.ts).
 */
export interface QueueArguments {
  /** Ready messages at most (RabbitMQ: unacknowledged ones do not count). */
  readonly 'x-max-length'?: number;
  /** Ready message body bytes at most. */
  readonly 'x-max-length-bytes'?: number;
  /** What a full queue does with a new message: drop its oldest (default) or refuse the new one (the publisher gets basic.nack). */
  readonly 'x-overflow'?: 'drop-head' | 'reject-publish' | 'reject-publish-dlx';
  /** Milliseconds a message may wait in the queue before it expires (at the head). */
  readonly 'x-message-ttl'?: number;
  /** Milliseconds the queue may stay unused (no consumer, no basic.get, no redeclare) before it is deleted. */
  readonly 'x-expires'?: number;
  /** Where rejected, expired and overflowing messages are republished ('' is the default exchange). */
  readonly 'x-dead-letter-exchange'?: string;
  /** The routing key they are republished with (else their own routing key). */
  readonly 'x-dead-letter-routing-key'?: string;
  /** Deliveries a message may have before it is dead-lettered (reason delivery_limit) or dropped instead of delivered again. */
  readonly 'x-delivery-limit'?: number;
  /** Only `quorum` is stored (classic is the default): durable only; redeliveries carry x-delivery-count. */
  readonly 'x-queue-type'?: 'quorum';
  /** Only `true` is stored: one consumer at a time gets messages, the earliest registered. */
  readonly 'x-single-active-consumer'?: true;
}

/** `a`: the queue's arguments (absent in records written before arguments existed, and when there are none). */
export interface QueueBody { readonly n: string; readonly op: 'declare' | 'delete'; readonly autoDelete?: boolean; readonly a?: QueueArguments }
/**
 * A binding of exchange `x` with key `k` to queue `q`, or (exchange-to-exchange, added later: records
 * before it always name `q`) to exchange `e`; exactly one of the two. `a`: the binding's arguments as an
 * AMQP field table with sorted names (amqp-exchange.ts bindingArgumentsOf), absent when there are none.
 */
export interface BindBody {
  readonly op: 'bind' | 'unbind';
  readonly x: string;
  readonly q?: string;
  readonly e?: string;
  readonly k: string;
  readonly a?: Uint8Array;
}
/**
 * An AMQP transaction's records are one group: `begin`, the records, `commit`, contiguous. Replay applies the
 * records at the commit, so a group a crash cut short is not applied; start-up then writes `abort` (with the
 * torn group's begin LSN) before anything else (transaction-groups.ts).
 */
export interface TxBody { readonly op: 'begin' | 'commit' | 'abort'; readonly begin?: number }
export interface DocBody { readonly col: string; readonly id: number; readonly doc: Readonly<Record<string, unknown>> }

export interface BodyOf {
  session: SessionBody;
  sub: SubBody;
  unsub: UnsubBody;
  msg: MsgBody;
  ack: AckBody;
  drop: DropBody;
  retain: RetainBody;
  rx2: Rx2Body;
  rel: RelBody;
  exchange: ExchangeBody;
  queue: QueueBody;
  bind: BindBody;
  doc: DocBody;
  deliver: DeliverBody;
  tx: TxBody;
}

/** A record as projections see it, live or replayed. */
export interface BrokerRecord {
  readonly lsn: number;
  readonly timestamp: number;
  readonly kind: number;
  readonly body: unknown;
}
