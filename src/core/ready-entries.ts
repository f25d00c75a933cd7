/**
 * The ready list of a destination (destination-runtime.ts), as a view over its
 * projection rather than a copy of it: a durable queue's persistent messages
 * are already entries of its QueueState (seq, LSN, size, delivery count), so
 * the run time keeps only what the projection cannot know:
 *
 * - `cursor`: every projection entry at or below it has been taken off the
 *   ready list (delivered and unacknowledged, or settled and about to leave
 *   the projection through its ack or drop record); the entries above it are
 *   ready, in seq order.
 * - `extra`: entries that are ready but not above the cursor or not in the
 *   projection at all: requeued durable messages (back at their seq place,
 *   read at the LSN the projection holds for them when they come up: a
 *   segment release may have moved them), and transient messages, which hold
 *   their body (never logged).
 * - `tail`: durable messages published in this tick whose msg record is not
 *   applied yet (Committer.commitDeferred); once the projection's nextSeq
 *   passes them they are the projection's (`absorbApplied`).
 *
 * Entries the projection takes (applied msg records: a persistent MQTT
 * session's messages come only that way) are counted as they arrive: every
 * projection entry from the nextSeq last seen on that lies above the cursor
 * is ready. Entries leave the projection only after the run time took them.
 *
 * The head is the smallest seq of the three. Counts and bytes are kept as
 * running totals, so length limits cost nothing per publish.
 */
import { EntryFlag, EntryQueue, type EntryView } from '../projections/entry-queue.js';
import type { DestinationState, StoredMessage } from '../projections/state.js';
import { assert } from '../assert.js';

export class ReadyEntries<M> {
  private cursor = 0;
  private extra = new EntryQueue<M>();
  private tail = new EntryQueue<M>();
  /** Projection entries above the cursor (all ready). */
  private aboveCursor = 0;
  private aboveCursorBytes = 0;
  /** The projection's nextSeq when its arrivals were last counted. */
  private counted = 0;
  private readonly arrived = { count: 0, bytes: 0 };
  /** Where head() found the head. */
  private headSource: 'extra' | 'tail' | 'projection' = 'extra';
  /** The head first() showed, until the list changes: take() removes it without looking again. */
  private shown: EntryView<M> | undefined = undefined;

  constructor(
    /** The projection of a durable destination; undefined: a list of its own (everything in `extra`). */
    private durable: DestinationState | undefined,
    /** A message the projection holds itself (read from a format-1 snapshot), as a consumer sees it. */
    private readonly heldMessage: (message: StoredMessage) => M,
  ) {
    // At start-up everything the projection holds is ready.
    if (durable) {
      this.aboveCursor = durable.pending.size;
      this.aboveCursorBytes = durable.pending.bytes;
      this.counted = durable.nextSeq;
    }
  }

  get size(): number {
    this.absorbApplied();
    return this.extra.size + this.tail.size + this.aboveCursor;
  }

  get bytes(): number {
    this.absorbApplied();
    return this.extra.bytes + this.tail.bytes + this.aboveCursorBytes;
  }

  /**
   * Put an entry on the ready list: a new durable message (its msg record may not be applied yet,
   * else it is the projection's already), a requeued one, or a transient one with its body.
   */
  insert(seq: number, lsn: number, size: number, flags: number, held?: M, deliveries = 0): void {
    this.shown = undefined;
    if (held !== undefined || this.durable === undefined) return this.extra.insert(seq, lsn, size, flags, held, deliveries);
    if (seq >= this.durable.nextSeq) return this.tail.insert(seq, lsn, size, flags, undefined, deliveries);
    // Above the cursor it is a message whose record is applied: counted as the projection's arrival. At or below it, a requeue.
    if (seq <= this.cursor) this.extra.insert(seq, lsn, size, flags, undefined, deliveries);
  }

  /** The head without taking it. */
  first(): EntryView<M> | undefined {
    this.absorbApplied();
    return (this.shown = this.head());
  }

  /** Take the head off the ready list. */
  shift(): EntryView<M> | undefined {
    const view = this.first();
    if (view !== undefined) this.take(view);
    return view;
  }

  /** Take off the head that first() has just shown, nothing changed since (a delivery looks once, not twice). */
  take(view: EntryView<M>): void {
    assert(view === this.shown, 'take() of an entry first() did not just show');
    this.shown = undefined;
    if (this.headSource === 'projection') {
      this.aboveCursor--;
      this.aboveCursorBytes -= view.size;
    } else {
      (this.headSource === 'extra' ? this.extra : this.tail).delete(view.seq);
    }
    // Nothing in the projection lies between the old cursor and this seq (it is the smallest ready one).
    if (this.durable && view.seq > this.cursor && (view.flags & EntryFlag.durable) !== 0) this.cursor = view.seq;
  }

  /** Everything ready, taken off the list (purge), in seq order. */
  clear(): EntryView<M>[] {
    const all: EntryView<M>[] = [];
    for (let view = this.shift(); view !== undefined; view = this.shift()) all.push(view);
    return all;
  }

  /**
   * The destination is deleted: every entry is let go at once, not taken one by one (a purge's cost), and the
   * projection's state with them; the list is empty from now on.
   */
  release(): void {
    this.durable = undefined;
    this.extra = new EntryQueue<M>();
    this.tail = new EntryQueue<M>();
    this.aboveCursor = 0;
    this.aboveCursorBytes = 0;
    this.shown = undefined;
  }

  /** The head, its place in headSource; a view is made of the head only (every delivery looks at it). */
  private head(): EntryView<M> | undefined {
    let seq = this.extra.firstSeq();
    this.headSource = 'extra';
    const tailSeq = this.tail.firstSeq();
    if (tailSeq !== undefined && (seq === undefined || tailSeq < seq)) {
      seq = tailSeq;
      this.headSource = 'tail';
    }
    if (this.aboveCursor > 0) {
      const entry = this.durable!.pending.entryAfter(this.cursor);
      if (entry !== undefined && (seq === undefined || entry.seq < seq)) {
        this.headSource = 'projection';
        const redelivered = entry.deliveries > 0 ? EntryFlag.redelivered : 0;
        const held = entry.held === undefined ? undefined : this.heldMessage(entry.held);
        return { seq: entry.seq, lsn: entry.lsn, size: entry.size, deliveries: entry.deliveries, flags: entry.flags | EntryFlag.durable | redelivered, held };
      }
    }
    if (seq === undefined) return undefined;
    return this.headSource === 'extra' ? this.atCurrentLsn(this.extra.first()!) : this.tail.first();
  }

  /**
   * A requeued durable entry at the LSN the projection holds for it now: a segment release may have moved
   * the message (segment-release.ts relinks the projection's entry) while it was out with a consumer, and
   * retention may have removed the record its delivery was read from.
   */
  private atCurrentLsn(view: EntryView<M>): EntryView<M> {
    if (this.durable === undefined || view.held !== undefined) return view;
    const lsn = this.durable.pending.get(view.seq)?.lsn;
    return lsn === undefined || lsn === view.lsn ? view : { ...view, lsn };
  }

  /**
   * The projection's arrivals since last time are counted when above the cursor. Tail entries whose
   * msg record has been applied now live in the projection (counted so); one taken and requeued
   * before its record was applied is an extra.
   */
  private absorbApplied(): void {
    const durable = this.durable;
    if (durable === undefined || durable.nextSeq === this.counted) return;
    this.shown = undefined;
    const arrived = durable.pending.tallyAfter(Math.max(this.counted - 1, this.cursor), this.arrived);
    this.aboveCursor += arrived.count;
    this.aboveCursorBytes += arrived.bytes;
    this.counted = durable.nextSeq;
    for (let seq = this.tail.firstSeq(); seq !== undefined && seq < durable.nextSeq; seq = this.tail.firstSeq()) {
      const entry = this.tail.shift()!;
      if (entry.seq <= this.cursor) this.extra.insert(entry.seq, entry.lsn, entry.size, entry.flags, undefined, entry.deliveries);
    }
  }
}
