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
 *
 * Live deliveries go out right after the commit is issued (for AMQP-only
 * publishes: deferred to the end of the tick, see `deferrable`), before it is
 * durable: a consumer may see a message whose publisher has not been acked
 * yet (as in RabbitMQ). The log's total order still guarantees that a
 * consumer's ack can never become durable before the message it acks.
 */
import type { DocBody, MsgBody, RetainBody, Rx2Body } from '../projections/records.js';
import type { StoredMessage } from '../projections/state.js';
import type { Durable, Qos } from './api.js';
import { amqpMessageOf, type QueueRuntime } from './amqp-queue.js';
import { record, type Committer, type PendingRecord } from './committer.js';
import type { CoreLimits } from './limits.js';
import type { BrokerObserver } from './observer.js';
import { minQos, swapSeparators, type SessionDelivery, type SessionRuntime } from './mqtt-sessions.js';

export interface Publication {
  /** MQTT topic, or AMQP routing key when `exchange` is set. */
  readonly topic: string;
  readonly exchange?: string;
  readonly payload: Uint8Array;
  readonly properties?: Uint8Array;
  /** MQTT publish QoS; for AMQP, 1 if persistent else 0 (what an MQTT subscriber may get at most). */
  readonly qos: Qos;
  /** AMQP delivery_mode=2, or an MQTT QoS ≥ 1 publish crossing into AMQP. */
  readonly persistent: boolean;
  readonly from: string;
  readonly sessions: ReadonlyMap<SessionRuntime, Qos>;
  readonly queues: readonly QueueRuntime[];
  readonly retain?: RetainBody;
  readonly rx2?: Rx2Body;
  readonly docs?: readonly DocBody[];
}

export interface PublishContext {
  readonly committer: Committer;
  readonly limits: CoreLimits;
  readonly delivery: SessionDelivery;
  readonly observer: BrokerObserver;
  dispatch(queue: QueueRuntime): void;
}

export function publish(context: PublishContext, routed: Publication): Durable {
  const publication = withoutUnreadableSessions(routed);
  const records: PendingRecord[] = [];
  const durableSessions = planSessions(context, publication, records);
  const durableQueues = planQueues(context, publication, records);
  const message = storedMessage(publication);
  if (durableSessions.length > 0 || durableQueues.length > 0) {
    const body: { -readonly [K in keyof MsgBody]: MsgBody[K] } = { t: publication.topic, p: publication.payload, from: publication.from };
    if (publication.exchange !== undefined) body.x = publication.exchange;
    if (publication.properties !== undefined) body.h = publication.properties;
    if (publication.exchange === undefined) body.qos = publication.qos;
    if (durableSessions.length > 0) body.s = durableSessions;
    if (durableQueues.length > 0) body.u = durableQueues.map(([queue, seq]) => [queue.name, seq] as const);
    records.push(record('msg', body));
  }
  if (publication.retain) records.push(record('retain', publication.retain));
  if (publication.rx2) records.push(record('rx2', publication.rx2));
  for (const doc of publication.docs ?? []) records.push(record('doc', doc));
  const durable = records.length === 0 ? undefined : deferrable(publication) ? context.committer.commitDeferred(records) : context.committer.commit(records);
  deliverToSessions(context, publication, message, durableSessions);
  deliverToQueues(context, publication, message, durableQueues);
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
 * An AMQP publish that reaches no MQTT session shares the tick's append with the other publishes
 * of the same socket read (Committer.commitDeferred): its queue entries are pushed and dispatched
 * now, and whatever record a delivery makes is appended after the msg record anyway. A publish
 * that reaches sessions commits at once: a persistent session's queue is the projection, which
 * must hold the message before it is sent.
 */
function deferrable(publication: Publication): boolean {
  return publication.exchange !== undefined && publication.sessions.size === 0;
}

type DurableSessionRow = readonly [client: string, seq: number, qos: 1 | 2];

function planSessions(context: PublishContext, publication: Publication, records: PendingRecord[]): DurableSessionRow[] {
  const rows: DurableSessionRow[] = [];
  for (const [session, subscriptionQos] of publication.sessions) {
    const qos = minQos(publication.qos, subscriptionQos);
    if (qos === 0 || !session.persistent) continue;
    if (session.state.pending.size >= context.limits.sessionQueueMessagesMax) {
      const oldest = context.delivery.oldestDroppable(session);
      if (oldest !== undefined) {
        records.push(record('drop', { c: session.clientId, s: [oldest], why: 'bound' }));
        context.observer.drop('session', 1);
      }
    }
    rows.push([session.clientId, session.state.nextSeq, qos]);
  }
  return rows;
}

function planQueues(context: PublishContext, publication: Publication, records: PendingRecord[]): Array<readonly [QueueRuntime, number]> {
  const rows: Array<readonly [QueueRuntime, number]> = [];
  for (const queue of publication.queues) {
    if (queue.readyCount >= context.limits.queueReadyMessagesMax) {
      const oldest = queue.shift()!;
      queue.dropped++;
      context.observer.drop('queue', 1);
      if (oldest.durable) records.push(record('drop', { q: queue.name, s: [oldest.seq], why: 'bound' }));
    }
    if (queue.durable && publication.persistent) rows.push([queue, queue.takeSeq()]);
  }
  return rows;
}

function storedMessage(publication: Publication): StoredMessage {
  const message: { -readonly [K in keyof StoredMessage]: StoredMessage[K] } = { lsn: 0, timestamp: 0, topic: publication.topic, payload: publication.payload, from: publication.from };
  if (publication.exchange !== undefined) message.exchange = publication.exchange;
  if (publication.properties !== undefined) message.properties = publication.properties;
  if (publication.exchange === undefined) message.qos = publication.qos;
  return message;
}

function deliverToSessions(context: PublishContext, publication: Publication, message: StoredMessage, durableRows: readonly DurableSessionRow[]): void {
  let durableIndex = 0;
  for (const [session, subscriptionQos] of publication.sessions) {
    const qos = minQos(publication.qos, subscriptionQos);
    if (qos === 0) {
      context.delivery.sendDirect(session, message, false);
      continue;
    }
    if (session.persistent) {
      // The msg record has already put the entry into the session's (projected) queue.
      session.queueForSending(durableRows[durableIndex++]![1]);
    } else {
      context.delivery.enqueueTransient(session, qos, message);
    }
    context.delivery.pump(session);
  }
}

function deliverToQueues(context: PublishContext, publication: Publication, message: StoredMessage, durableRows: ReadonlyArray<readonly [QueueRuntime, number]>): void {
  const durableSeq = new Map(durableRows);
  const exchange = publication.exchange ?? 'amq.topic';
  const routingKey = publication.exchange === undefined ? swapSeparators(publication.topic) : publication.topic;
  const amqpMessage = amqpMessageOf(message, routingKey, exchange);
  for (const queue of publication.queues) {
    const seq = durableSeq.get(queue);
    queue.push({ seq: seq ?? queue.takeSeq(), message: amqpMessage, durable: seq !== undefined, redelivered: false });
    context.dispatch(queue);
  }
}
