/**
 * Shared subscriptions at run time: `$share/{group}/{filter}` (MQTT 5.0
 * §4.8.2; offered to 3.1.1 clients as Mosquitto and EMQX do). Each message
 * matching a group's filter goes to ONE member of the group.
 *
 * A group is a destination of its own, as an AMQP queue is (not a choice of a
 * member's session at publish time): a DestinationRuntime (destination-runtime.ts)
 * whose ready list is a list of its own and, when the group has a persistent
 * member, the projection's GroupState (projections/shared-groups.ts), which
 * the msg/ack/deliver/drop records keep. Its consumers are the MQTT
 * connections of its members: round robin among the connected ones, skipping
 * a member whose in-flight window (its own messages, shared deliveries and
 * owed PUBRELs) is full.
 *
 * A shared delivery borrows a packet id of the member's connection
 * (SessionRuntime.sharedInflight); the session's pump neither reuses it nor
 * fills the window past it. When the member's connection goes, what it had in
 * flight goes back to its place in the group, counted as delivered (DUP on
 * the next delivery, to whichever member is next). A QoS 2 delivery leaves the
 * group at its PUBREC (one `rel` record naming the group); its PUBREL/PUBCOMP
 * is then the member session's, as for its own messages. Retained messages
 * are never sent on a shared subscription (§4.8.2).
 */
import { EntryFlag, type EntryView } from '../projections/entry-queue.js';
import { isSharedFilter, sharedFilterPrefix } from '../projections/shared-groups.js';

export { isSharedFilter };
import type { BrokerState, GroupState, StoredMessage } from '../projections/state.js';
import type { Qos } from './api.js';
import { record, type Committer, type PendingRecord } from './committer.js';
import { ConsumerRing, DestinationRuntime, isDurableEntry, recordBoundDrops } from './destination-runtime.js';
import type { CoreLimits } from './limits.js';
import type { MessageStore } from './message-store.js';
import { minQos, mqttTopicOf, packetIdOf, unsendable, type SessionDelivery, type SessionRuntime } from './mqtt-sessions.js';
import { mqttPropertiesOf } from './bridge-properties.js';
import { outgoingPropertiesOf } from './mqtt-message-properties.js';
import { qosOf } from '../projections/destinations.js';
import type { BrokerObserver } from './observer.js';
import { sharedDeliveryFlagsOf } from './subscription-delivery.js';
import { SubscriptionIndex } from './subscription-index.js';
import { validateTopicFilter } from './topic-filter.js';

export interface SharedFilter {
  /** The group's name: the whole `$share/{group}/{filter}`. */
  readonly name: string;
  readonly group: string;
  readonly filter: string;
}

/** `$share/{group}/{filter}` split into its parts, or why it is malformed (SUBACK 0x80). */
export function parseSharedFilter(text: string): SharedFilter | { readonly problem: string } {
  const rest = text.slice(sharedFilterPrefix.length);
  const slash = rest.indexOf('/');
  if (slash < 0) return { problem: 'a shared subscription needs "/" and a topic filter after its share name [MQTT-4.8.2-2]' };
  const group = rest.slice(0, slash);
  const filter = rest.slice(slash + 1);
  if (group === '') return { problem: 'a share name is at least one character long [MQTT-4.8.2-1]' };
  if (group.includes('+') || group.includes('#')) return { problem: 'a share name must not contain "+" or "#" [MQTT-4.8.2-2]' };
  if (filter === '') return { problem: 'a shared subscription needs a topic filter after its share name [MQTT-4.8.2-2]' };
  const problem = validateTopicFilter(filter);
  return problem === undefined ? { name: text, group, filter } : { problem };
}

/** Why a subscription filter is a malformed shared subscription, or undefined (a good one, or not a shared one). */
export function sharedFilterProblem(filter: string): string | undefined {
  if (!isSharedFilter(filter)) return undefined;
  const parsed = parseSharedFilter(filter);
  return 'problem' in parsed ? parsed.problem : undefined;
}

/** A message of a group on a member's connection, awaiting PUBACK: unacknowledged in the group by its seq. */
export interface SharedInflight {
  readonly group: SharedGroup;
  readonly seq: number;
}

/** One group at run time: ready entries (durable ones are also in the projection), its members in join order. */
export class SharedGroup extends DestinationRuntime<StoredMessage> {
  readonly members = new ConsumerRing<SessionRuntime>();
  readonly memberQos = new Map<SessionRuntime, Qos>();

  constructor(readonly name: string, readonly shareName: string, readonly filter: string, private readonly state: BrokerState) {
    super(undefined, (message) => message);
    this.nextSeq = state.groups.get(name)?.nextSeq ?? 1;
  }

  /** The projection's group: present while a persistent session is a member. */
  get durableState(): GroupState | undefined {
    return this.state.groups.get(this.name);
  }

  add(member: SessionRuntime, qos: Qos): void {
    if (!this.memberQos.has(member)) this.members.add(member);
    this.memberQos.set(member, qos);
  }

  remove(member: SessionRuntime): void {
    if (this.members.remove(member)) this.memberQos.delete(member);
  }
}

export interface SharedSubscriptionsContext {
  readonly state: BrokerState;
  readonly committer: Committer;
  readonly limits: CoreLimits;
  readonly observer: BrokerObserver;
  readonly store: MessageStore;
  readonly delivery: SessionDelivery;
}

export type DurableGroupRow = readonly [group: string, seq: number, qos: 1 | 2];

/** Every group of the broker: routing by filter, membership, dispatch and the acks that come back. */
export class SharedSubscriptions {
  readonly groups = new Map<string, SharedGroup>();
  private readonly index = new SubscriptionIndex<SharedGroup>();
  private readonly groupsOfMember = new Map<SessionRuntime, Set<SharedGroup>>();
  /** Where each member's search for a free packet id starts next. */
  private readonly packetIdCursor = new WeakMap<SessionRuntime, number>();

  constructor(private readonly context: SharedSubscriptionsContext) {}

  /** The groups whose filter matches a topic. */
  match(topic: string): readonly SharedGroup[] {
    return this.groups.size === 0 ? noMatch : [...this.index.match(topic).keys()];
  }

  /** The groups a session is a member of. */
  groupsOf(session: SessionRuntime): ReadonlySet<SharedGroup> {
    return this.groupsOfMember.get(session) ?? noGroups;
  }

  /** At start-up, before members join: each persistent group's messages are ready, in seq order, as they were. */
  recover(): void {
    for (const groupState of this.context.state.groups.values()) {
      const parsed = parseSharedFilter(groupState.name);
      if ('problem' in parsed) continue; // unreachable: only validated filters are recorded
      const group = this.groupFor(parsed);
      for (const entry of groupState.pending.entries()) group.ready.insert(entry.seq, entry.lsn, entry.size, entry.flags | EntryFlag.durable, entry.held, entry.deliveries);
    }
  }

  /** The session joins the group (its `sub` record, when persistent, is already committed). */
  join(session: SessionRuntime, shared: SharedFilter, qos: Qos): void {
    const group = this.groupFor(shared);
    group.add(session, qos);
    let groups = this.groupsOfMember.get(session);
    if (groups === undefined) {
      groups = new Set();
      this.groupsOfMember.set(session, groups);
    }
    groups.add(group);
    this.dispatch(group);
  }

  /** The session leaves the group; what it has in flight from it stays its to acknowledge [MQTT-3.10.4-3]. */
  leave(session: SessionRuntime, name: string): void {
    const group = this.groups.get(name);
    if (group === undefined) return;
    group.remove(session);
    const groups = this.groupsOfMember.get(session);
    groups?.delete(group);
    if (groups?.size === 0) this.groupsOfMember.delete(session);
    if (group.members.list.length === 0) this.drop(group);
  }

  /** The session is discarded (clean session gone, or replaced by clean_session=1): it leaves every group. */
  leaveAll(session: SessionRuntime): void {
    this.release(session);
    for (const group of [...this.groupsOf(session)]) this.leave(session, group.name);
  }

  /** The member's connection is gone: what it had in flight goes back to its group, delivered once more. */
  release(session: SessionRuntime): void {
    if (session.sharedInflight.size === 0) return;
    const touched = new Set<SharedGroup>();
    for (const { group, seq } of session.sharedInflight.values()) {
      group.requeue(group.settle(seq)!);
      touched.add(group);
    }
    session.sharedInflight.clear();
    for (const group of touched) if (this.groups.get(group.name) === group) this.dispatch(group);
  }

  /** The member has room again (connected, or acknowledged something): its groups may send to it. */
  memberReady(session: SessionRuntime): void {
    for (const group of this.groupsOf(session)) if (group.readyCount > 0) this.dispatch(group);
  }

  /** A PUBACK for a shared delivery: true when the packet id was one (else it is the session's own). */
  puback(session: SessionRuntime, packetId: number): boolean {
    const inflight = session.sharedInflight.get(packetId);
    if (inflight === undefined) return false;
    session.sharedInflight.delete(packetId);
    this.finish(inflight.group, inflight.group.settle(inflight.seq)!);
    // The session's own queue may have waited for this id or this room.
    this.context.delivery.pump(session);
    this.memberReady(session);
    return true;
  }

  /** A PUBREC for a shared QoS 2 delivery: true when the packet id was one. The message leaves the group; the member owes the rest. */
  pubrec(session: SessionRuntime, packetId: number): boolean {
    const inflight = session.sharedInflight.get(packetId);
    if (inflight === undefined) return false;
    session.sharedInflight.delete(packetId);
    const { group } = inflight;
    const entry = group.settle(inflight.seq)!;
    // A clean member's obligation is in memory only; a durable entry then still needs its ack record to leave the group.
    if (!session.persistent && isDurableEntry(entry)) this.context.committer.settleLater('ack', { g: group.name }, entry.seq);
    this.context.delivery.owePubrel(session, { c: session.clientId, id: packetId, s: entry.seq, g: group.name });
    return true;
  }

  /**
   * Publish, before the commit: make room in each group (the session bounds, dropping the oldest
   * ready message) and give the message a seq in each persistent group when it is durable.
   */
  plan(groups: readonly SharedGroup[], publishQos: Qos, size: number, records: PendingRecord[]): DurableGroupRow[] {
    const rows: DurableGroupRow[] = [];
    if (publishQos === 0) return rows;
    const { sessionQueueMessagesMax, sessionQueueBytesMax } = this.context.limits;
    for (const group of groups) {
      const dropped = group.dropOldest(sessionQueueMessagesMax, sessionQueueBytesMax, size);
      if (dropped.length > 0) this.context.observer.drop('session', dropped.length);
      recordBoundDrops({ g: group.name }, dropped, records);
      if (group.durableState !== undefined) rows.push([group.name, group.nextSeq, publishQos]);
    }
    return rows;
  }

  /** Publish, after the commit: each group takes the message (QoS 0: straight to one connected member). */
  deliver(groups: readonly SharedGroup[], message: StoredMessage, qos: Qos, rows: readonly DurableGroupRow[]): void {
    let row = 0;
    for (const group of groups) {
      if (qos === 0) {
        const member = group.members.next((candidate) => candidate.link !== undefined);
        if (member !== undefined) this.context.delivery.sendDirect(member, message, false, group.name);
        continue;
      }
      const seq = group.takeSeq();
      const qosFlag = qos === 2 ? EntryFlag.qos2 : 0;
      if (rows[row]?.[0] === group.name) {
        row++;
        group.ready.insert(seq, message.lsn, message.payload.byteLength, EntryFlag.durable | qosFlag);
      } else {
        group.ready.insert(seq, 0, message.payload.byteLength, qosFlag, message);
      }
      this.dispatch(group);
    }
  }

  /** Hand ready messages to members while one has room. */
  dispatch(group: SharedGroup): void {
    const hasRoom = (member: SessionRuntime): boolean => member.link !== undefined && member.windowHasRoom(this.context.limits.sessionInflightMessagesMax);
    while (group.readyCount > 0) {
      const member = group.members.next(hasRoom);
      if (member === undefined) return;
      const entry = group.ready.shift()!;
      const durable = isDurableEntry(entry);
      const projected = durable ? group.durableState?.pending.get(entry.seq) : undefined;
      // No longer the group's: its last persistent member left, and its durable messages went with it.
      if (durable && projected === undefined) continue;
      // The projection's LSN, not this copy's: segment release may have moved the message since.
      const message = entry.held ?? this.context.store.tryRead(projected?.lsn ?? entry.lsn);
      if (message instanceof Error) {
        group.ready.insert(entry.seq, entry.lsn, entry.size, entry.flags, undefined, entry.deliveries);
        return member.link!.readFailed(message);
      }
      this.send(group, member, entry, message);
    }
  }

  private send(group: SharedGroup, member: SessionRuntime, entry: EntryView<StoredMessage>, message: StoredMessage): void {
    const durable = isDurableEntry(entry);
    const topic = mqttTopicOf(message);
    const stored = mqttPropertiesOf(message);
    const now = this.context.delivery.deliveryTime(stored);
    const unsent = unsendable(member.reader, topic, stored, now);
    if (unsent !== undefined) {
      // Dropped unsent, recorded, as from a session's queue.
      if (unsent === 'expired') this.context.observer.drop('session', 1);
      if (durable) this.context.committer.commitQuietly([record('drop', { g: group.name, s: [entry.seq], why: unsent })]);
      return;
    }
    // MQTT 5 properties travel to a group member as to any subscriber (the expiry as what is left of it).
    const properties = outgoingPropertiesOf(stored, now);
    const qos = minQos(qosOf(entry.flags), group.memberQos.get(member) ?? 0);
    // The member's subscription to this group gives the RETAIN flag (Retain As Published) and the identifier.
    const { retain, subscriptionIdentifiers } = sharedDeliveryFlagsOf(member.state, group.name, message);
    this.context.observer.messageOut('mqtt');
    if (qos === 0) {
      member.link!.sendPublish({ topic, payload: message.payload, qos: 0, retain, dup: false, properties, subscriptionIdentifiers });
      this.finish(group, entry);
      return;
    }
    const packetId = this.freePacketId(member);
    member.sharedInflight.set(packetId, { group, seq: entry.seq });
    group.track(entry);
    if (durable) this.context.committer.settleLater('deliver', { g: group.name }, entry.seq);
    member.link!.sendPublish({ topic, payload: message.payload, qos, retain, dup: entry.deliveries > 0, packetId, properties, subscriptionIdentifiers });
  }

  private finish(group: SharedGroup, entry: EntryView<StoredMessage>): void {
    if (isDurableEntry(entry)) this.context.committer.settleLater('ack', { g: group.name }, entry.seq);
  }

  /**
   * A packet id not in use on the member's connection. The search starts half the id space away
   * from the ids the session's own queue takes next (packetIdOf(seq) from its next seq on), so the
   * two rarely meet; when they do, the session's pump waits for this id's PUBACK.
   */
  private freePacketId(member: SessionRuntime): number {
    let id = this.packetIdCursor.get(member) ?? packetIdOf(member.state.nextSeq + 32_767);
    for (let tries = 0; tries < 65_535; tries++) {
      id = (id % 65_535) + 1;
      if (!member.packetIdInUse(id)) {
        this.packetIdCursor.set(member, id);
        return id;
      }
    }
    throw new Error('unreachable: the in-flight window is far below 65535 packet ids');
  }

  private groupFor(shared: SharedFilter): SharedGroup {
    let group = this.groups.get(shared.name);
    if (group === undefined) {
      group = new SharedGroup(shared.name, shared.group, shared.filter, this.context.state);
      this.groups.set(shared.name, group);
      this.index.add(shared.filter, group, 1);
    }
    return group;
  }

  /** No member left: the group is gone (a persistent one's projection went with its last member's unsub or end record). */
  private drop(group: SharedGroup): void {
    this.groups.delete(group.name);
    this.index.remove(group.filter, group);
  }
}

const noGroups: ReadonlySet<SharedGroup> = new Set();
const noMatch: SharedGroup[] = [];
