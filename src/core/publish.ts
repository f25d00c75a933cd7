/**
 * The publish path shared by MQTT and AMQP: given where a message goes
 * (sessions with their effective QoS, queues), decide what is durable, write
 * ONE commit (bound drops, the msg record with every durable destination and
 * its seq, retain/rx2/doc records), then hand the message to the runtime
 * queues and pumps.
 *
 * Durable means: a persistent MQTT session with effective QoS ≥ 1, or a
 * durable AMQP queue with a persistent message. With no durable destination
 * and no other record, nothing is written and the result is `undefined`.
 * Clean sessions' rows go to their committer, which writes nothing
 * (transient-committer.ts).
 *
 * Live deliveries go out right after the commit is issued (for AMQP-only
 * publishes: deferred to the end of the tick, see `deferrable`), before it is
 * durable: a consumer may see a message whose publisher has not been acked
 * yet (as in RabbitMQ). The log's total order still guarantees that a
 * consumer's ack can never become durable before the message it acks.
 */
import type { DeathReason, DocBody, MsgBody, RetainBody, Rx2Body, SessionBody } from '../projections/records.js';
import { messagePropertiesBody } from '../projections/message-properties.js';
import type { MessageProperties, StoredMessage } from '../projections/state.js';
import { EntryFlag, type EntryView } from '../projections/entry-queue.js';
import type { AmqpMessage, Durable, Qos } from './api.js';
import { amqpMessageOf, type QueueRuntime } from './amqp-queue.js';
import { record, type Committer, type PendingRecord } from './committer.js';
import { recordBoundDrops } from './destination-runtime.js';
import type { TransientCommitter } from './transient-committer.js';
import type { CoreLimits } from './limits.js';
import type { MessageStore } from './message-store.js';
import type { BrokerObserver } from './observer.js';
import { minQos, swapSeparators, type SessionDelivery, type SessionRuntime } from './mqtt-sessions.js';
import type { DurableGroupRow, SharedGroup, SharedSubscriptions } from './shared-subscription.js';

export interface Publication {
  /** MQTT topic, or AMQP routing key when `exchange` is set. */
  readonly topic: string;
  readonly exchange?: string;
  readonly payload: Uint8Array;
  readonly properties?: Uint8Array;
  /** MQTT 5 properties of an MQTT publish. */
  readonly mqttProperties?: MessageProperties | undefined;
  /** MQTT publish QoS; for AMQP, 1 if persistent else 0 (what an MQTT subscriber may get at most). */
  readonly qos: Qos;
  /** AMQP delivery_mode=2, or an MQTT QoS ≥ 1 publish crossing into AMQP. */
  readonly persistent: boolean;
  readonly from: string;
  readonly sessions: ReadonlyMap<SessionRuntime, Qos>;
  readonly queues: readonly QueueRuntime[];
  /** MQTT shared-subscription groups whose filter matches: each gives the message to one member. */
  readonly groups?: readonly SharedGroup[];
  readonly retain?: RetainBody | undefined;
  readonly rx2?: Rx2Body | undefined;
  readonly docs?: readonly DocBody[] | undefined;
  /** A session record after the message's, in its commit: a delayed will published, or the session whose will it is ended (session-expiry.ts). */
  readonly session?: SessionBody | undefined;
  /**
   * A dead-lettered copy (dead-letter.ts): the msg record names the durable entry it replaces, or,
   * when no durable queue takes the copy, `otherwise` ends that entry.
   */
  readonly deadLettered?: { readonly entry: readonly [queue: string, seq: number, why: DeathReason]; readonly otherwise: PendingRecord };
}

export interface PublishContext {
  readonly committer: Committer;
  /** The committer of clean sessions: their records are written nowhere. */
  readonly transient: TransientCommitter;
  readonly limits: CoreLimits;
  readonly delivery: SessionDelivery;
  readonly observer: BrokerObserver;
  readonly store: MessageStore;
  readonly shared: SharedSubscriptions;
  dispatch(queue: QueueRuntime): void;
  /** Ready messages a length limit pushed out of a queue that has a dead-letter exchange: dead-letter them (reason maxlen). */
  overflowed?(queue: QueueRuntime, entries: ReadonlyArray<EntryView<AmqpMessage>>): void;
}

const noGroups: readonly SharedGroup[] = [];
const noGroupRows: readonly DurableGroupRow[] = [];

export function publish(context: PublishContext, routed: Publication): Durable {
  const publication = withoutUnreadableSessions(routed);
  const records: PendingRecord[] = [];
  const durableSessions: SessionRow[] = [];
  const transientSessions = planSessions(context, publication, durableSessions, records);
  const { rows: durableQueues, taking, overflowed } = planQueues(context, publication, records);
  const groups = publication.groups ?? noGroups;
  const durableGroups = groups.length > 0 ? context.shared.plan(groups, publication.qos, publication.payload.byteLength, records) : noGroupRows;
  let lsn = 0;
  const deferred = deferrable(publication);
  if (durableSessions.length > 0 || durableQueues.length > 0 || durableGroups.length > 0) {
    // A commit appends the acks and deliveries settled earlier in this tick first: let them take their LSNs now.
    if (!deferred) context.committer.flushSettled();
    const body = msgBodyOf(publication);
    if (durableSessions.length > 0) body.s = durableSessions;
    if (durableQueues.length > 0) body.u = durableQueues.map(([queue, seq]) => [queue.name, seq] as const);
    if (durableGroups.length > 0) body.g = durableGroups;
    if (publication.deadLettered !== undefined) body.d = publication.deadLettered.entry;
    // Queues keep this LSN as their reference to the message: known now, before a deferred append.
    lsn = context.committer.nextLsn + records.length;
    records.push(record('msg', body));
  } else if (publication.deadLettered !== undefined) {
    records.push(publication.deadLettered.otherwise);
  }
  if (publication.retain) records.push(record('retain', publication.retain));
  if (publication.rx2) records.push(record('rx2', publication.rx2));
  for (const doc of publication.docs ?? []) records.push(record('doc', doc));
  if (publication.session) records.push(record('session', publication.session));
  const message = storedMessage(publication, lsn, context.committer.now());
  if (lsn !== 0) context.store.remember(message);
  const durable = records.length === 0 ? undefined : deferred ? context.committer.commitDeferred(records) : context.committer.commit(records);
  if (transientSessions !== undefined) context.transient.enqueue(transientSessions, message);
  deliverToSessions(context, publication, message);
  deliverToQueues(context, taking, message, durableQueues);
  if (groups.length > 0) context.shared.deliver(groups, message, publication.qos, durableGroups);
  if (overflowed !== undefined) for (const [queue, entries] of overflowed) context.overflowed?.(queue, entries);
  return durable;
}

/**
 * Subscribers whose topic ACL refuses this topic (MqttTopicReader) are not
 * destinations at all: nothing is queued or recorded for them. The one
 * routing-time check, for MQTT and AMQP publishes alike; the pump checks
 * again at sending time.
 */
function withoutUnreadableSessions(publication: Publication): Publication {
  let readable: Map<SessionRuntime, Qos> | undefined;
  // Built only when some subscriber has an ACL: without --acl a publish pays for no topic copy.
  let topic: string | undefined;
  for (const [session, qos] of publication.sessions) {
    const reader = session.reader;
    const denied = reader !== undefined
      && !reader.mayRead(topic ??= publication.exchange === undefined ? publication.topic : swapSeparators(publication.topic));
    if (denied && readable === undefined) {
      readable = new Map();
      for (const [earlier, earlierQos] of publication.sessions) {
        if (earlier === session) break;
        readable.set(earlier, earlierQos);
      }
    } else if (!denied) readable?.set(session, qos);
  }
  return readable === undefined ? publication : { ...publication, sessions: readable };
}

/**
 * An AMQP publish that reaches no MQTT session (nor shared group) shares the tick's append with the other publishes
 * of the same socket read (Committer.commitDeferred): its queue entries are pushed and dispatched
 * now, and whatever record a delivery makes is appended after the msg record anyway. A publish
 * that reaches sessions commits at once: a persistent session's queue is the projection, which
 * must hold the message before it is sent.
 */
function deferrable(publication: Publication): boolean {
  return publication.exchange !== undefined && publication.sessions.size === 0 && (publication.groups?.length ?? 0) === 0;
}

export type SessionRow = readonly [client: string, seq: number, qos: 1 | 2];

/**
 * Each session with an effective QoS ≥ 1 gets a msg row, after room is made by its bound: persistent
 * sessions in `durable` (their drops in the publish's `records`), clean ones in the rows returned
 * (their drops committed at once, by their committer).
 */
function planSessions(context: PublishContext, publication: Publication, durable: SessionRow[], records: PendingRecord[]): SessionRow[] | undefined {
  let transient: SessionRow[] | undefined;
  for (const [session, subscriptionQos] of publication.sessions) {
    const qos = minQos(publication.qos, subscriptionQos);
    if (qos === 0) continue;
    const logged = session.committer === context.committer;
    context.delivery.makeRoom(session, publication.payload.byteLength, logged ? records : undefined);
    (logged ? durable : (transient ??= [])).push([session.clientId, session.state.nextSeq, qos]);
  }
  return transient;
}

/** The message part of its msg record (no destinations yet). */
function msgBodyOf(publication: Publication): { -readonly [K in keyof MsgBody]: MsgBody[K] } {
  const body: { -readonly [K in keyof MsgBody]: MsgBody[K] } = { t: publication.topic, p: publication.payload, from: publication.from };
  if (publication.exchange !== undefined) body.x = publication.exchange;
  if (publication.properties !== undefined) body.h = publication.properties;
  if (publication.mqttProperties !== undefined) body.m = messagePropertiesBody(publication.mqttProperties);
  if (publication.exchange === undefined) body.qos = publication.qos;
  if (publication.retain !== undefined) body.rp = true;
  return body;
}

/**
 * Make room in each queue by dropping its oldest ready messages: the broker-wide bound and the
 * queue's own x-max-length / x-max-length-bytes, the smaller of each. A message that the queue's
 * own limits cannot hold even when empty (x-max-length 0, a body over x-max-length-bytes) drops
 * everything older and then itself, as RabbitMQ's drop-head does; that queue is left out of the
 * returned list. (RabbitMQ would first hand such a message to a waiting consumer; Cairn does not.)
 * Reject-publish queues that are full never get here (queuesAccepting).
 */
function planQueues(context: PublishContext, publication: Publication, records: PendingRecord[]): PlannedQueues {
  const rows: Array<readonly [QueueRuntime, number]> = [];
  const { queueReadyMessagesMax, queueReadyBytesMax } = context.limits;
  const size = publication.payload.byteLength;
  let taking: QueueRuntime[] | undefined;
  let overflowed: Map<QueueRuntime, Array<EntryView<AmqpMessage>>> | undefined;
  // Indexed, not entries() with destructuring: this runs for every publish.
  for (let index = 0; index < publication.queues.length; index++) {
    const queue = publication.queues[index]!;
    const { readyMessagesMax, readyBytesMax } = queue.limits;
    const messagesMax = Math.min(queueReadyMessagesMax, readyMessagesMax);
    const bytesMax = Math.min(queueReadyBytesMax, readyBytesMax);
    const fits = readyMessagesMax >= 1 && size <= readyBytesMax;
    const oldest = queue.dropOldest(fits ? messagesMax : 0, bytesMax, size);
    // With a dead-letter exchange the oldest are dead-lettered after this publish (their ends are the copies' records).
    if (oldest.length > 0 && context.overflowed !== undefined && queue.queueArguments?.['x-dead-letter-exchange'] !== undefined) {
      (overflowed ??= new Map()).set(queue, oldest);
    } else if (oldest.length > 0) {
      queue.dropped += oldest.length;
      context.observer.drop('queue', oldest.length);
      recordBoundDrops({ q: queue.name }, oldest, records);
    }
    if (!fits) {
      queue.dropped++;
      context.observer.drop('queue', 1);
      taking ??= publication.queues.slice(0, index);
      continue;
    }
    taking?.push(queue);
    // A quorum queue keeps every message it takes, persistent or not, as RabbitMQ's do.
    if (queue.durable && (publication.persistent || queue.keepsEveryMessage)) rows.push([queue, queue.takeSeq()]);
  }
  return { rows, taking: taking ?? publication.queues, overflowed };
}

interface PlannedQueues {
  /** Entries pushed out of queues that dead-letter them. */
  readonly overflowed: ReadonlyMap<QueueRuntime, ReadonlyArray<EntryView<AmqpMessage>>> | undefined;
  /** Durable queues with the seq each gives the message. */
  readonly rows: Array<readonly [QueueRuntime, number]>;
  /** The queues the message goes into. */
  readonly taking: readonly QueueRuntime[];
}

function storedMessage(publication: Publication, lsn: number, timestamp: number): StoredMessage {
  const message: { -readonly [K in keyof StoredMessage]: StoredMessage[K] } = { lsn, timestamp, topic: publication.topic, payload: publication.payload, from: publication.from };
  if (publication.exchange !== undefined) message.exchange = publication.exchange;
  if (publication.properties !== undefined) message.properties = publication.properties;
  if (publication.mqttProperties !== undefined) message.mqttProperties = publication.mqttProperties;
  if (publication.exchange === undefined) message.qos = publication.qos;
  if (publication.retain !== undefined) message.publishedRetain = true;
  return message;
}

function deliverToSessions(context: PublishContext, publication: Publication, message: StoredMessage): void {
  for (const [session, subscriptionQos] of publication.sessions) {
    // A QoS ≥ 1 message is the session's entry already: it came with its msg record (the pump finds it at the tail).
    if (minQos(publication.qos, subscriptionQos) === 0) context.delivery.sendDirect(session, message, false);
    else context.delivery.pump(session);
  }
}

function deliverToQueues(context: PublishContext, queues: readonly QueueRuntime[], message: StoredMessage, durableRows: ReadonlyArray<readonly [QueueRuntime, number]>): void {
  if (queues.length === 0) return;
  const durableSeq = new Map(durableRows);
  const size = message.payload.byteLength;
  let transient: AmqpMessage | undefined;
  for (const queue of queues) {
    const seq = durableSeq.get(queue);
    // A durable entry is its LSN; a transient one holds its message.
    if (seq !== undefined) queue.ready.insert(seq, message.lsn, size, EntryFlag.durable);
    else queue.ready.insert(queue.takeSeq(), 0, size, 0, transient ??= amqpMessageOf(message));
    context.dispatch(queue);
  }
}
