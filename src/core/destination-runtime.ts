/**
 * One destination at run time, whatever the protocol: an AMQP queue, an MQTT
 * session and an MQTT shared-subscription group are this type with their
 * consumers plugged in. What every destination keeps is written here once:
 * - ready entries in seq order (ready-entries.ts: a view over the projection
 *   of a durable queue or a session, or a list of its own for a group);
 * - the entries taken and not settled yet (unacknowledged, in flight), by
 *   delivery: the seq, or the packet id on a session's connection;
 * - delivery counts: an entry that comes back (a requeue, a connection gone)
 *   returns to its seq place flagged redelivered, the delivery counted;
 * - the drop-oldest bound: the oldest ready entries leave until one more fits;
 * - round robin over the consumers that accept a message (ConsumerRing): an
 *   AMQP consumer's prefetch, an MQTT member's in-flight window decide.
 * A seq is ready or unacknowledged, never both.
 */
import { EntryFlag, type EntryView } from '../projections/entry-queue.js';
import type { DestinationRef } from '../projections/records.js';
import type { DestinationState, StoredMessage } from '../projections/state.js';
import { assert } from '../assert.js';
import { record, type PendingRecord } from './committer.js';
import { ReadyEntries } from './ready-entries.js';

const nothingDropped: never[] = [];

export class DestinationRuntime<M, Taken extends EntryView<M> = EntryView<M>> {
  readonly ready: ReadyEntries<M>;
  /** Entries taken off the ready list and not settled yet, by delivery. */
  readonly unacked = new Map<number, Taken>();
  nextSeq: number;

  constructor(
    /** The projection of a durable destination whose ready list is a view over it; undefined: a list of its own. */
    projection: DestinationState | undefined,
    heldMessage: (message: StoredMessage) => M,
  ) {
    this.nextSeq = projection?.nextSeq ?? 1;
    this.ready = new ReadyEntries(projection, heldMessage);
  }

  get readyCount(): number {
    return this.ready.size;
  }

  get readyBytes(): number {
    return this.ready.bytes;
  }

  takeSeq(): number {
    return this.nextSeq++;
  }

  /** Taken and delivered: unacknowledged until settled or requeued. */
  track(entry: Taken, delivery = entry.seq): void {
    assert(!this.unacked.has(delivery), 'a delivery is unacknowledged twice');
    this.unacked.set(delivery, entry);
  }

  /** The unacknowledged entry of `delivery`, no longer so; undefined when there is none. */
  settle(delivery: number): Taken | undefined {
    const entry = this.unacked.get(delivery);
    if (entry !== undefined) this.unacked.delete(delivery);
    return entry;
  }

  /** Every unacknowledged entry back on the ready list (their consumer is gone), each delivery counted. */
  requeueAll(): void {
    for (const entry of this.unacked.values()) this.requeue(entry);
    this.unacked.clear();
  }

  /** Back to its seq place, flagged redelivered, with the delivery that just ended counted. */
  requeue(entry: EntryView<M>): void {
    this.ready.insert(entry.seq, entry.lsn, entry.size, entry.flags | EntryFlag.redelivered, entry.held, entry.deliveries + 1);
  }

  /**
   * Deleted: its messages are let go at once. Something may hold the destination a while longer (the HTTP API keeps
   * its last queue lists until the next), and a deleted queue's transient messages are their bodies.
   */
  release(): void {
    this.ready.release();
    this.unacked.clear();
  }

  /** The drop-oldest bound: the oldest ready entries, taken off until one more of `size` bytes fits (ready count below `messagesMax`, ready bytes within `bytesMax`). */
  dropOldest(messagesMax: number, bytesMax: number, size: number): Array<EntryView<M>> {
    if (this.ready.size < messagesMax && this.ready.bytes + size <= bytesMax) return nothingDropped;
    const dropped: Array<EntryView<M>> = [];
    while (this.ready.size > 0 && (this.ready.size >= messagesMax || this.ready.bytes + size > bytesMax)) dropped.push(this.ready.shift()!);
    return dropped;
  }
}

/** The drop record of the entries a bound dropped that are in the log (the others were never logged). */
export function recordBoundDrops(destination: DestinationRef, dropped: ReadonlyArray<EntryView<unknown>>, records: PendingRecord[]): void {
  const seqs = dropped.filter(isDurableEntry).map((entry) => entry.seq);
  if (seqs.length > 0) records.push(record('drop', { ...destination, s: seqs, why: 'bound' }));
}

/** Whether an entry is in the log (acks, deliveries and drops of it are records). */
export function isDurableEntry(entry: EntryView<unknown>): boolean {
  return (entry.flags & EntryFlag.durable) !== 0;
}

/**
 * The consumers of a destination in the order they came, and round robin among those that can take
 * a message, restricted to the highest priority among them (lower priorities get messages only
 * while the higher ones are blocked, as RabbitMQ's consumer priorities).
 */
export class ConsumerRing<C> {
  readonly list: C[] = [];
  private cursor = 0;
  /** Consumers with a priority other than 0: when none, round robin needs no priority comparison. */
  private prioritized = 0;

  constructor(private readonly priorityOf: (consumer: C) => number = () => 0) {}

  add(consumer: C): void {
    this.list.push(consumer);
    if (this.priorityOf(consumer) !== 0) this.prioritized++;
  }

  remove(consumer: C): boolean {
    const index = this.list.indexOf(consumer);
    if (index < 0) return false;
    this.list.splice(index, 1);
    if (this.priorityOf(consumer) !== 0) this.prioritized--;
    if (this.cursor > index) this.cursor--;
    if (this.cursor >= this.list.length) this.cursor = 0;
    return true;
  }

  /** The next consumer in round robin that `accepts` a message, among the highest priority that do; undefined when none does. */
  next(accepts: (consumer: C) => boolean): C | undefined {
    const count = this.list.length;
    let chosen = -1;
    for (let i = 0; i < count; i++) {
      const index = (this.cursor + i) % count;
      const consumer = this.list[index]!;
      if (chosen >= 0 && this.priorityOf(consumer) <= this.priorityOf(this.list[chosen]!)) continue;
      if (!accepts(consumer)) continue;
      chosen = index;
      if (this.prioritized === 0) break;
    }
    if (chosen < 0) return undefined;
    this.cursor = (chosen + 1) % count;
    return this.list[chosen];
  }
}
