/**
 * MQTT sessions at run time: which client is connected where, what is in
 * flight on its connection, and the pump that moves a session's queue onto
 * the wire within its in-flight window.
 *
 * A session's queue, subscriptions, rx2 and rel sets ARE its SessionState,
 * changed only by committing records through the session's committer: a
 * persistent session's writes them to the log (its state is the broker's
 * projection), a clean session's writes nothing (transient-committer.ts).
 * So both run the same code, and only persistent ones survive a restart.
 *
 * Packet ids of outgoing QoS 1/2 messages are derived from the session seq
 * ((seq - 1) mod 65535 + 1), so a resend after a restart reuses the original
 * id [MQTT-4.4.0-1] without logging ids. Messages are sent in seq order and
 * the window (in flight + owed PUBRELs) is far below 65535, so two live
 * messages never share an id; the pump still checks and waits if they would.
 */
import { qosOf } from '../projections/destinations.js';
import type { RelBody } from '../projections/records.js';
import type { MessageProperties, SessionState, StoredMessage } from '../projections/state.js';
import type { Durable, MqttClientLink, MqttTopicReader, Qos } from './api.js';
import { record, type DestinationCommitter, type PendingRecord } from './committer.js';
import type { CoreLimits } from './limits.js';
import type { MessageStore } from './message-store.js';
import { mqttPropertiesOf } from './bridge-properties.js';
import { isExpired, outgoingPropertiesOf } from './mqtt-message-properties.js';
import type { BrokerObserver } from './observer.js';
import type { SharedInflight } from './shared-subscription.js';
import { DestinationRuntime, recordBoundDrops } from './destination-runtime.js';
import { deliveryFlagsOf, sharedDeliveryFlagsOf } from './subscription-delivery.js';

export function packetIdOf(seq: number): number {
  return ((seq - 1) % 65535) + 1;
}

/**
 * A session is a destination (destination-runtime.ts) whose consumer is its MQTT connection: the
 * ready list is a view over its SessionState, and what is in flight is unacknowledged by packet id.
 */
export class SessionRuntime extends DestinationRuntime<StoredMessage> {
  link: MqttClientLink | undefined = undefined;
  /** The topic ACL of the client that connected last; undefined: it reads everything (or, after a restart, not known until it connects). */
  reader: MqttTopicReader | undefined = undefined;
  /** Bumped on every connect: handles of an older generation are dead (takeover). */
  generation = 0;
  /** Shared-subscription deliveries on the current connection by packet id (shared-subscription.ts): they take room in the window and their ids are not reused. */
  readonly sharedInflight = new Map<number, SharedInflight>();
  /** Inbound QoS 2: packet id → durability of the publish it stands for (so a duplicate's PUBREC waits too). */
  readonly rx2Durable = new Map<number, Promise<void> | undefined>();
  /** How its records name it (made once: every delivery and ack names it). */
  readonly destination: { readonly c: string };

  constructor(
    readonly clientId: string,
    /** Where the session's records go: the log (persistent) or nowhere (clean). */
    readonly committer: DestinationCommitter,
    readonly state: SessionState,
  ) {
    super(state, (message) => message);
    this.destination = { c: clientId };
  }

  /** Whether the session outlives its connection (and a restart). */
  get persistent(): boolean {
    return this.committer.durable;
  }

  /** Whether the in-flight window (own messages, shared deliveries, owed PUBRELs) has room, narrowed by an MQTT 5 client's Receive Maximum [MQTT-4.9.0-1]. */
  windowHasRoom(windowMax: number): boolean {
    return this.unacked.size + this.sharedInflight.size + this.state.rel.size < Math.min(windowMax, this.link?.inflightMax ?? Infinity);
  }

  /** Whether a packet id is taken on the connection: by a message in flight either way or an owed PUBREL. */
  packetIdInUse(packetId: number): boolean {
    return this.unacked.has(packetId) || this.sharedInflight.has(packetId) || this.state.rel.has(packetId);
  }
}

/** Moves a session's queue onto the wire and settles what comes back. */
export class SessionDelivery {
  constructor(
    private readonly limits: CoreLimits,
    private readonly observer: BrokerObserver,
    private readonly store: MessageStore,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * The time a delivery of a message with `stored` properties is judged at (expired? what is left of its interval?).
   * Only an expiry reads the clock (a call into the runtime, per delivery); without one, 0, which nothing reads.
   */
  deliveryTime(stored: MessageProperties | undefined): number {
    return stored?.expiresAt === undefined ? 0 : this.clock();
  }

  /** Send as much of the queue as the window allows. */
  pump(session: SessionRuntime): void {
    const link = session.link;
    if (!link) return;
    while (session.windowHasRoom(this.limits.sessionInflightMessagesMax)) {
      const entry = session.ready.first();
      if (entry === undefined) return;
      const seq = entry.seq;
      const packetId = packetIdOf(seq);
      if (session.packetIdInUse(packetId)) return; // id still in use: wait for its ack
      const message = entry.held ?? this.store.tryRead(entry.lsn);
      // A damaged segment under this message: it stays queued; this client's connection goes, the broker stays up.
      if (message instanceof Error) return link.readFailed(message);
      session.ready.take(entry);
      const topic = mqttTopicOf(message);
      const stored = mqttPropertiesOf(message);
      const now = this.deliveryTime(stored);
      const unsent = unsendable(session.reader, topic, stored, now);
      if (unsent !== undefined) {
        this.dropQueued(session, seq, unsent);
        continue;
      }
      session.track(entry, packetId);
      const properties = outgoingPropertiesOf(stored, now);
      const { retain, subscriptionIdentifiers } = deliveryFlagsOf(session.state, message, topic, message.retain === true);
      link.sendPublish({ topic, payload: message.payload, qos: qosOf(entry.flags), retain, dup: entry.deliveries > 0, packetId, properties, subscriptionIdentifiers });
      this.observer.messageOut('mqtt');
      session.committer.settleLater('deliver', session.destination, seq);
    }
  }

  /** A queued message dropped unsent (unsendable): as a record, so replay agrees. */
  private dropQueued(session: SessionRuntime, seq: number, why: 'acl' | 'expired'): void {
    if (why === 'expired') this.observer.drop('session', 1);
    session.committer.commitQuietly([record('drop', { c: session.clientId, s: [seq], why })]);
  }

  /**
   * Makes room for one more message of `size` bytes within the session's bounds (count and bytes,
   * which count every queued message): the oldest ready ones are dropped, their drop record put in
   * `records` (the caller's commit) or, without, committed now. In-flight ones are the client's to
   * finish and are never dropped.
   */
  makeRoom(session: SessionRuntime, size: number, records?: PendingRecord[]): void {
    const { pending } = session.state;
    const notReady = pending.size - session.readyCount;
    const dropped = session.dropOldest(this.limits.sessionQueueMessagesMax - notReady, this.limits.sessionQueueBytesMax - (pending.bytes - session.readyBytes), size);
    if (dropped.length === 0) return;
    this.observer.drop('session', dropped.length);
    const own: PendingRecord[] = records ?? [];
    recordBoundDrops(session.destination, dropped, own);
    if (records === undefined) session.committer.commitQuietly(own);
  }

  puback(session: SessionRuntime, packetId: number): void {
    const entry = session.settle(packetId);
    if (entry === undefined) return; // a PUBACK for nothing we sent: ignore it, as brokers do
    session.committer.settleLater('ack', session.destination, entry.seq);
    this.pump(session);
  }

  pubrec(session: SessionRuntime, packetId: number): void {
    const entry = session.settle(packetId);
    if (entry === undefined) {
      // A resent PUBREC for a message already PUBREC'd: the PUBREL is owed again.
      if (session.state.rel.has(packetId)) session.link?.sendPubrel(packetId);
      return;
    }
    this.owePubrel(session, { c: session.clientId, id: packetId, s: entry.seq });
  }

  /** A PUBREC taken: the message is the client's; PUBREL goes out once the obligation is recorded (at once when nothing is written). */
  owePubrel(session: SessionRuntime, body: RelBody): void {
    const packetId = body.id;
    const durable = session.committer.commit([record('rel', body)]);
    if (durable === undefined) return session.link?.sendPubrel(packetId);
    const generation = session.generation;
    durable.then(
      () => { if (session.generation === generation) session.link?.sendPubrel(packetId); },
      () => undefined, // the log failed: the connection will be closed by the next durable command
    );
  }

  pubcomp(session: SessionRuntime, packetId: number): void {
    if (!session.state.rel.has(packetId)) return;
    session.committer.commitQuietly([record('rel', { c: session.clientId, id: packetId, clear: true })]);
    this.pump(session);
  }

  /** Inbound QoS 2 PUBREL: forget the id [MQTT-4.3.3-2]. PUBCOMP waits for the clear to be durable, or a restart could swallow a new message with that id. */
  pubrel(session: SessionRuntime, packetId: number): Durable {
    session.rx2Durable.delete(packetId);
    if (!session.state.rx2.has(packetId)) return undefined;
    return session.committer.commit([record('rx2', { c: session.clientId, id: packetId, clear: true })]);
  }

  /** On (re)connect: owed PUBRELs first, then everything ready (what was in flight is back in it), in seq order. */
  start(session: SessionRuntime): void {
    for (const packetId of session.state.rel.keys()) session.link?.sendPubrel(packetId);
    this.pump(session);
  }

  /**
   * A QoS 0 delivery, straight to the wire. `onSubscribe`: a retained message sent because of a
   * new subscription; `group`: a shared group's delivery to this member.
   */
  sendDirect(session: SessionRuntime, message: StoredMessage, onSubscribe: boolean, group?: string): void {
    if (!session.link) return;
    const stored = mqttPropertiesOf(message);
    const properties = outgoingPropertiesOf(stored, this.deliveryTime(stored));
    const topic = mqttTopicOf(message);
    const { retain, subscriptionIdentifiers } = group === undefined
      ? deliveryFlagsOf(session.state, message, topic, onSubscribe)
      : sharedDeliveryFlagsOf(session.state, group, message);
    session.link.sendPublish({ topic, payload: message.payload, qos: 0, retain, dup: false, properties, subscriptionIdentifiers });
    this.observer.messageOut('mqtt');
  }
}

/**
 * Why a queued message is dropped unsent, or undefined: the client may no longer read its topic
 * (the ACL changed, or it was queued after a restart before the client's rules were known), or its
 * expiry (or AMQP expiration) passed while it was queued [MQTT-3.3.2-5].
 */
export function unsendable(reader: MqttTopicReader | undefined, topic: string, stored: MessageProperties | undefined, now: number): 'acl' | 'expired' | undefined {
  if (reader?.mayRead(topic) === false) return 'acl';
  return isExpired(stored, now) ? 'expired' : undefined;
}

/** The MQTT topic of a stored message: AMQP routing keys become MQTT topics by swapping '.' and '/'. */
export function mqttTopicOf(message: StoredMessage): string {
  return message.exchange === undefined ? message.topic : swapSeparators(message.topic);
}

/**
 * MQTT '/' ⇄ AMQP '.', and the other way round, as RabbitMQ's MQTT plugin does:
 * swapping (rather than only replacing) keeps a '.' inside an MQTT level and a
 * '/' inside an AMQP word intact across the bridge, so the mapping round-trips.
 */
export function swapSeparators(name: string): string {
  // Nearly every name holds one of the two at most: one native replaceAll, not a string built a character at a time.
  if (!name.includes('.')) return name.replaceAll('/', '.');
  if (!name.includes('/')) return name.replaceAll('.', '/');
  let out = '';
  for (const ch of name) out += ch === '/' ? '.' : ch === '.' ? '/' : ch;
  return out;
}

export function minQos(a: Qos, b: Qos): Qos {
  return a < b ? a : b;
}
