/**
 * MqttCore: the MQTT commands of the broker (connect, subscribe, publish and
 * the QoS handshakes), turned into records and runtime deliveries.
 *
 * Takeover [MQTT-3.1.4-2]: a CONNECT for a client id that is attached
 * elsewhere bumps the session's generation and closes the old link; every
 * handle checks its generation first, so the loser of the race can neither
 * deliver nor acknowledge anything after that. The old connection's will is
 * published unless the new one continues the session and the will has a
 * delay (MQTT 5 section 3.1.4; in 3.1.1 always, [MQTT-3.1.2-8]), as Mosquitto does.
 */
import { assert } from '../assert.js';
import type { DocBody, RetainBody, SessionBody, SubBody } from '../projections/records.js';
import type {
  Durable, MqttClientLink, MqttConnectOptions, MqttCore, MqttIncomingPublish, MqttPublishResult, MqttSessionHandle, MqttSubscribeRequest, MqttSubscribeResult,
  MqttTopicReader, MqttWill, Qos,
} from './api.js';
import { queuesAccepting, type QueueRuntime } from './amqp-queue.js';
import { record, type PendingRecord } from './committer.js';
import { documentOf, ingestMatches, type IngestRoute } from './ingest.js';
import { isExpired, storedPropertiesOf } from './mqtt-message-properties.js';
import { minQos, SessionRuntime } from './mqtt-sessions.js';
import { SessionExpiry, willOf } from './session-expiry.js';
import type { Timers } from './timers.js';
import { messagePropertiesBody } from '../projections/message-properties.js';
import { subscriptionOptionsBody } from '../projections/subscription-options.js';
import { publish, type PublishContext } from './publish.js';
import { parseSharedFilter, type SharedFilter } from './shared-subscription.js';
import { SubscriptionIndex } from './subscription-index.js';
import { isSharedFilter } from '../projections/shared-groups.js';
import { topicMatchesFilter, validateTopicFilter } from './topic-filter.js';
import { copyOfBytes } from './unpinned-bytes.js';
import type { BrokerState, MessageProperties, StoredMessage } from '../projections/state.js';

export interface MqttCoreContext extends PublishContext {
  readonly state: BrokerState;
  readonly sessions: Map<string, SessionRuntime>;
  readonly subscriptions: SubscriptionIndex<SessionRuntime>;
  readonly ingestRoutes: readonly IngestRoute[];
  readonly clock: () => number;
  /** Timers on the same clock: session expiry and delayed wills. */
  readonly timers: Timers;
  /** The broker's own retained values ($SYS topics), in memory only: never recorded, never in a snapshot. */
  readonly systemRetained: Map<string, StoredMessage>;
  /** Queues bound to amq.topic that match this MQTT topic as a routing key (the bridge into AMQP). */
  bridgeQueues(topic: string): readonly QueueRuntime[];
  /** A message with an expiry enters this queue: its head timer must look at it (message-expiry.ts). */
  watchExpiry(queue: QueueRuntime): void;
  nextDocumentId(collection: string): number;
}

export class MqttCoreImpl implements MqttCore {
  private readonly expiry: SessionExpiry;

  constructor(private readonly context: MqttCoreContext) {
    this.expiry = new SessionExpiry(
      context.committer, context.sessions, context.clock, context.timers, (session) => this.discard(session),
      (clientId, will, then) => mqttPublish(context, clientId, undefined, will, then).durable,
    );
  }

  /**
   * `cleanSession` is 3.1.1's clean_session, or MQTT 5's Clean Start. With
   * `options.sessionExpiryInterval` (MQTT 5) the session persists only when
   * that is above 0 [MQTT-3.1.2-23], though a stored one is still resumed by a
   * Clean Start of 0 (and then ends when its client leaves).
   */
  connect(
    clientId: string, cleanSession: boolean, link: MqttClientLink, reader?: MqttTopicReader, options: MqttConnectOptions = {},
  ): { session: MqttSessionHandle; sessionPresent: boolean; durable: Durable } {
    const { sessions, state, committer } = this.context;
    const existing = sessions.get(clientId);
    const offlineWill = existing !== undefined && existing.link === undefined ? existing.state.will : undefined;
    const liveWill = existing?.link?.takenOver();
    this.expiry.cancel(clientId);
    const interval = options.sessionExpiryInterval;
    const persistent = interval === undefined ? !cleanSession : interval > 0;
    const continued = !cleanSession && existing?.persistent === true;
    // The old connection's will, or an offline session's delayed one (MQTT 5 section 3.1.4, [MQTT-3.1.2-8]): it goes
    // now unless this connection continues the session and the will has a delay, which the return cancels [MQTT-3.1.3-9].
    const dueWill = liveWill !== undefined && (!continued || (liveWill.delayInterval ?? 0) === 0)
      ? liveWill
      : offlineWill !== undefined && !continued ? willOf(offlineWill) : undefined;
    let durable: Durable;
    let session: SessionRuntime;
    let sessionPresent = false;
    if (!cleanSession && existing?.persistent) {
      session = existing;
      sessionPresent = true;
      // The session's expiry is the latest CONNECT's (none for 3.1.1); an offline one is online again, its delayed will cancelled [MQTT-3.1.2-8].
      if (existing.state.expiryInterval !== interval || existing.state.expiresAt !== undefined || existing.state.will !== undefined) {
        durable = committer.commit([record('session', { c: clientId, op: 'open', ...(interval === undefined ? {} : { e: interval }) })]);
      }
    } else {
      if (existing) this.discard(existing);
      // clean_session=1 discards a stored session [MQTT-3.1.2-6]; wait for that before CONNACK, or a crash would revive it.
      if (!persistent && state.sessions.has(clientId)) durable = committer.commit([record('session', { c: clientId, op: 'end' })]);
      // A clean session is opened the same way, by a record its committer writes nowhere.
      const [own, ownState] = persistent ? [committer, state] : [this.context.transient, this.context.transient.state];
      durable = own.commit([record('session', { c: clientId, op: 'open', ...(interval === undefined ? {} : { e: interval }) })]) ?? durable;
      session = new SessionRuntime(clientId, own, ownState.sessions.get(clientId)!);
      sessions.set(clientId, session);
    }
    session.generation++;
    // Taken over: shared deliveries in flight on the old connection go back to their groups (the new one may get them).
    session.link = undefined;
    this.context.shared.release(session);
    session.link = link;
    session.reader = reader;
    session.requeueAll();
    // After the new session's records: a continued session subscribed to the will's topic gets it on this connection.
    if (dueWill !== undefined) durable = joinDurables(durable, mqttPublish(this.context, clientId, undefined, dueWill).durable);
    return { session: new SessionHandle(this.context, session, session.generation, this.expiry, (gone) => this.discard(gone)), sessionPresent, durable };
  }

  /**
   * Call once after start-up: sessions whose clients were connected when the
   * broker stopped are offline from now, and every offline session gets its
   * MQTT 5 expiry (ending those whose time passed while the broker was down).
   */
  startSessionExpiry(): void {
    this.expiry.resumeAfterStart();
  }

  /** End the offline sessions whose expiry has come by the core's clock (their timers call this too). */
  expireSessions(): void {
    this.expiry.expireDue();
  }

  publishSystem(topic: string, payload: Uint8Array): void {
    assert(topic.startsWith('$SYS/'), `publishSystem: '${topic}' is not a $SYS topic`);
    const message: StoredMessage = { lsn: 0, timestamp: this.context.clock(), topic, payload, qos: 0, from: '$SYS' };
    this.context.systemRetained.set(topic, message);
    // Live subscribers get it with retain=0, like any forwarded publish [MQTT-3.3.1-9].
    for (const session of this.context.subscriptions.match(topic).keys()) this.context.delivery.sendDirect(session, message, false);
  }

  private discard(session: SessionRuntime): void {
    this.expiry.cancel(session.clientId);
    this.context.subscriptions.removeAll(session);
    this.context.sessions.delete(session.clientId);
    session.link = undefined;
    this.context.shared.leaveAll(session);
    session.generation++;
    // Nothing keeps a clean session's state but its committer: it ends with its runtime (a persistent one by its own record).
    if (!session.persistent) session.committer.commit([record('session', { c: session.clientId, op: 'end' })]);
  }
}

class SessionHandle implements MqttSessionHandle {
  constructor(
    private readonly context: MqttCoreContext,
    private readonly session: SessionRuntime,
    private readonly generation: number,
    private readonly expiry: SessionExpiry,
    private readonly discard: (session: SessionRuntime) => void,
  ) {}

  get clientId(): string {
    return this.session.clientId;
  }

  get persistent(): boolean {
    return this.session.persistent;
  }

  private get live(): boolean {
    return this.session.generation === this.generation;
  }

  start(): void {
    if (!this.live) return;
    this.context.delivery.start(this.session);
    this.context.shared.memberReady(this.session);
  }

  subscribe(requests: readonly MqttSubscribeRequest[]): MqttSubscribeResult {
    const granted: Array<Qos | 0x80> = [];
    const records: PendingRecord[] = [];
    const joins: Array<[SharedFilter, Qos]> = [];
    const retainedFilters: string[] = [];
    for (const request of requests) {
      const filter = request.filter;
      const shared = isSharedFilter(filter) ? parseSharedFilter(filter) : undefined;
      if (!this.live || validateTopicFilter(filter) !== undefined || (shared !== undefined && 'problem' in shared)) {
        granted.push(0x80);
        continue;
      }
      const qos = request.qos;
      const existed = this.session.state.subscriptions.has(filter);
      const body: SubBody = { c: this.session.clientId, f: filter, qos, ...subscriptionOptionsBody(request.options) };
      records.push(record('sub', body));
      if (shared === undefined) this.context.subscriptions.add(filter, this.session, qos, body.nl === true);
      else joins.push([shared, qos]);
      if (wantsRetained(request.options?.retainHandling, existed)) retainedFilters.push(filter);
      granted.push(qos);
    }
    const durable = records.length > 0 ? this.session.committer.commit(records) : undefined;
    // After the commit: a persistent member's group is in the projection by now, so the group knows it is durable.
    for (const [shared, qos] of joins) this.context.shared.join(this.session, shared, qos);
    return { granted, durable, retainedFilters };
  }

  sendRetained(filters: readonly string[]): void {
    if (!this.live) return;
    const { state } = this.context;
    for (const filter of filters) {
      const subscriptionQos = this.session.state.subscriptions.get(filter);
      // Retained messages are not sent on a shared subscription (MQTT 5.0 §4.8.2).
      if (subscriptionQos === undefined || isSharedFilter(filter)) continue;
      // $SYS values only ever match a filter that starts with '$' [MQTT-4.7.2-1]; they are QoS 0.
      if (filter.startsWith('$')) {
        for (const value of this.context.systemRetained.values()) {
          if (topicMatchesFilter(value.topic, filter)) this.context.delivery.sendDirect(this.session, value, true);
        }
      }
      const now = this.context.clock();
      for (const retained of state.retained.values()) {
        if (!topicMatchesFilter(retained.topic, filter) || this.session.reader?.mayRead(retained.topic) === false) continue;
        // An expired retained value is no longer sent [MQTT-3.3.2-5]; it stays until replaced, as the log says.
        if (isExpired(retained.mqttProperties, now)) continue;
        const qos = minQos(retained.qos, subscriptionQos);
        const mqttProperties = retained.mqttProperties;
        const message: StoredMessage = {
          lsn: retained.lsn, timestamp: retained.timestamp, topic: retained.topic, payload: retained.payload, qos: retained.qos, retain: true,
          ...(mqttProperties !== undefined ? { mqttProperties } : {}),
        };
        if (qos === 0) this.context.delivery.sendDirect(this.session, message, true);
        else this.queueRetained(message, qos);
      }
    }
    this.context.delivery.pump(this.session);
  }

  /**
   * A retained QoS ≥ 1 delivery is queued like any message, so a persistent session's survives a
   * crash too: room made within the session's bounds, then its msg record, through the session's committer.
   */
  private queueRetained(message: StoredMessage, qos: 1 | 2): void {
    const { committer, store } = this.context;
    const records: PendingRecord[] = [];
    this.context.delivery.makeRoom(this.session, message.payload.byteLength, records);
    const mqttProperties = message.mqttProperties;
    records.push(record('msg', {
      t: message.topic, p: message.payload, qos: message.qos ?? qos, r: true, s: [[this.session.clientId, this.session.state.nextSeq, qos]], from: '$retained',
      ...(mqttProperties !== undefined ? { m: messagePropertiesBody(mqttProperties) } : {}),
    }));
    if (this.session.committer === committer) {
      // Records settled earlier in this tick go first; then the msg record takes the LSN the cache needs.
      committer.flushSettled();
      store.remember({ ...message, lsn: committer.nextLsn + records.length - 1, from: '$retained' });
    }
    this.session.committer.commitQuietly(records);
  }

  subscribed(filter: string): boolean {
    return this.live && this.session.state.subscriptions.has(filter);
  }

  unsubscribe(filters: readonly string[]): Durable {
    if (!this.live) return undefined;
    const records: PendingRecord[] = [];
    for (const filter of filters) {
      const known = this.session.state.subscriptions.has(filter);
      this.context.subscriptions.remove(filter, this.session);
      if (!known) continue;
      records.push(record('unsub', { c: this.session.clientId, f: filter }));
    }
    const durable = records.length > 0 ? this.session.committer.commit(records) : undefined;
    for (const filter of filters) if (isSharedFilter(filter)) this.context.shared.leave(this.session, filter);
    return durable;
  }

  publish(incoming: MqttIncomingPublish): MqttPublishResult {
    if (!this.live) return { durable: undefined, duplicate: true };
    const packetId = incoming.packetId;
    const rx2 = incoming.qos === 2 && packetId !== undefined ? { c: this.session.clientId, id: packetId } : undefined;
    if (rx2 !== undefined && this.session.state.rx2.has(rx2.id)) return { durable: this.session.rx2Durable.get(rx2.id), duplicate: true };
    // The rx2 record goes in the message's commit when the session's records go to the log (durable together), else to its own committer.
    const inPublish = this.session.committer === this.context.committer;
    if (rx2 !== undefined && !inPublish) this.session.committer.commit([record('rx2', rx2)]);
    const { durable, matched, refused } = mqttPublish(this.context, this.session.clientId, inPublish ? rx2 : undefined, incoming);
    if (incoming.qos === 2 && packetId !== undefined) this.session.rx2Durable.set(packetId, durable);
    // One shape for every result, no spreads: this runs for every PUBLISH.
    return { durable, duplicate: false, noSubscribers: !matched, quotaExceeded: refused };
  }

  awaitsRelease(packetId: number): boolean {
    return this.live && this.session.state.rx2.has(packetId);
  }

  pubrel(packetId: number): Durable {
    return this.live ? this.context.delivery.pubrel(this.session, packetId) : undefined;
  }

  puback(packetId: number): void {
    if (!this.live || this.context.shared.puback(this.session, packetId)) return;
    this.context.delivery.puback(this.session, packetId);
    this.context.shared.memberReady(this.session);
  }

  pubrec(packetId: number): void {
    if (this.live && !this.context.shared.pubrec(this.session, packetId)) this.context.delivery.pubrec(this.session, packetId);
  }

  pubcomp(packetId: number): void {
    if (!this.live) return;
    this.context.delivery.pubcomp(this.session, packetId);
    this.context.shared.memberReady(this.session);
  }

  detach(sessionExpiryInterval?: number, will?: MqttWill): Durable {
    // Taken over (the new connection decides): the will is not published [MQTT-3.1.4-2].
    if (!this.live) return undefined;
    const session = this.session;
    session.link = undefined;
    session.requeueAll();
    session.generation++;
    // A member that disconnects with shared deliveries in flight: another member gets them (with DUP).
    this.context.shared.release(session);
    if (!session.persistent) {
      this.discard(session);
      // The session ends with its connection: a will goes now, whatever its delay [MQTT-3.1.3-9].
      return will === undefined ? undefined : mqttPublish(this.context, session.clientId, undefined, will).durable;
    }
    return this.expiry.left(session, sessionExpiryInterval ?? session.state.expiryInterval, will);
  }
}

/**
 * Retain Handling [MQTT-3.3.1-9] [MQTT-3.3.1-10] [MQTT-3.3.1-11]: 0 (and every 3.1.1
 * subscription) sends the retained messages at each SUBSCRIBE, 1 only when the subscription did
 * not exist before it, 2 never.
 */
function wantsRetained(retainHandling: 0 | 1 | 2 | undefined, existed: boolean): boolean {
  return retainHandling === undefined || retainHandling === 0 || (retainHandling === 1 && !existed);
}

/** Both done (either may be nothing to wait for). */
function joinDurables(first: Durable, second: Durable): Durable {
  if (first === undefined) return second;
  if (second === undefined) return first;
  return Promise.all([first, second]).then(() => undefined);
}

/**
 * Route an MQTT publish: MQTT subscribers, amq.topic (bridge), ingest routes, the retained store.
 * `session`: a session record that goes in the same commit, after the message (a delayed will published).
 * `matched`: some destination took it (the retained store is not one); `refused`: a full
 * reject-publish queue bound to amq.topic did not.
 */
function mqttPublish(
  context: MqttCoreContext, from: string, rx2: { c: string; id: number } | undefined, incoming: Omit<MqttIncomingPublish, 'packetId'>, session?: SessionBody,
): { durable: Durable; matched: boolean; refused: boolean } {
  const { topic, qos } = incoming;
  // Maybe lent (a view of a socket read, MqttIncomingPublish): used as it is until the message is kept.
  const lentPayload = incoming.payload;
  const mqttProperties = incoming.properties === undefined ? undefined : storedPropertiesOf(incoming.properties, context.clock());
  context.observer.messageIn('mqtt');
  let docs: DocBody[] | undefined;
  for (const route of context.ingestRoutes) {
    if (!ingestMatches(route, topic)) continue;
    (docs ??= []).push({ col: route.collection, id: context.nextDocumentId(route.collection), doc: documentOf(lentPayload, topic, context.clock()) });
  }
  // The publisher's own No Local subscriptions do not match [MQTT-3.8.3-3].
  const sessions = context.subscriptions.match(topic, context.sessions.get(from));
  const groups = context.shared.match(topic);
  // A full reject-publish queue refuses it: an MQTT 5 publisher hears 0x97 (as from RabbitMQ), a 3.1.1 one cannot be told.
  const bridged = context.bridgeQueues(topic);
  // `length`, not `byteLength` (the same for bytes): in Node 20's V8 only `length` is read inline, `byteLength` is a generic load and a call.
  const queues = queuesAccepting(bridged, lentPayload.length);
  // In a queue its expiry is an AMQP expiration (bridge-properties.ts), expired at the head as any.
  if (mqttProperties?.expiresAt !== undefined) for (const queue of queues) context.watchExpiry(queue);
  const matched = sessions.size > 0 || groups.length > 0 || queues.length > 0 || docs !== undefined;
  // Routed nowhere and nothing to record (a topic nobody listens to): nothing to plan, as in amqp-core.
  if (!matched && !incoming.retain && rx2 === undefined && session === undefined) return { durable: undefined, matched, refused: false };
  // A QoS 0 message that only live sessions and shared groups take is written to their sockets during this call and
  // kept by nothing (never queued for a session or a group, not logged, not retained): it goes out as the lent view.
  const kept = qos > 0 || queues.length > 0 || docs !== undefined || incoming.retain || rx2 !== undefined || session !== undefined;
  const payload = kept ? copyOfBytes(lentPayload) : lentPayload;
  // Every field named, absent ones undefined (no spreads): one object shape for every MQTT publish.
  const durable = publish(context, {
    topic, payload, qos, persistent: qos >= 1, from, mqttProperties, sessions, groups, queues, retain: incoming.retain ? retainBody(topic, payload, qos, mqttProperties) : undefined, rx2, session, docs,
  });
  return { durable, matched, refused: queues.length < bridged.length };
}

function retainBody(topic: string, payload: Uint8Array, qos: Qos, mqttProperties: MessageProperties | undefined): RetainBody {
  const body: RetainBody = { t: topic, p: payload, qos };
  return mqttProperties === undefined ? body : { ...body, m: messagePropertiesBody(mqttProperties) };
}
