/**
 * EntryQueue: the messages of one destination (an MQTT session, an AMQP
 * queue, or the ready list of a queue at run time), in ascending seq order,
 * as references: seq, the LSN of the message's msg record, its payload size,
 * delivery count and a few flag bits — no payload. The payload is read back
 * from the log by LSN when the message is delivered (core/message-store.ts).
 *
 * Stored as parallel typed arrays (25 bytes per entry plus the growth slack)
 * rather than one object per message: a million queued messages must cost
 * tens of megabytes, not the ~1 KB each that objects in a Map cost.
 *
 * A message that is not in the log (a transient message, or one carried
 * inline by an old snapshot) is "held": its object lives in a side map,
 * counted in `bytes` like any other.
 *
 * Removal leaves a tombstone that the head skips; the arrays are compacted
 * when tombstones outnumber live entries. Inserting below the tail (a
 * requeue, or a deferred publish applied after a later transient one) moves
 * the entries above it up by one.
 */
import { assert } from '../assert.js';

/** Flag bits of an entry. */
export const EntryFlag = {
  /** Delivery QoS 2 (MQTT); unset: QoS 1. */
  qos2: 1,
  /** Redelivered (AMQP runtime ready list): a consumer may have seen it. */
  redelivered: 2,
  /** Written to the log (AMQP runtime ready list): acks and drops become records. */
  durable: 4,
  removed: 128,
} as const;

export interface EntryView<M> {
  readonly seq: number;
  readonly lsn: number;
  readonly size: number;
  readonly deliveries: number;
  readonly flags: number;
  /** The message itself when it is not read from the log. */
  readonly held: M | undefined;
}

const initialCapacity = 8;

/** The five columns of a queue's live entries, in seq order (snapshots, and a queue's runtime copy at start-up). */
export interface EntryColumns {
  readonly seqs: Float64Array;
  readonly lsns: Float64Array;
  readonly sizes: Uint32Array;
  readonly deliveries: Uint32Array;
  readonly flags: Uint8Array;
}

export class EntryQueue<M = never> {
  /**
   * A queue holding the first `count` entries of these columns (ascending, distinct seqs; the arrays are taken,
   * not copied): no insert per entry. Slots past `count` are room to grow into, so the first insert after a
   * restart does not copy every column.
   */
  static fromColumns<M>(columns: EntryColumns, held?: ReadonlyMap<number, M>, count = columns.seqs.length): EntryQueue<M> {
    const { seqs, lsns, sizes, deliveries, flags } = columns;
    assert([seqs.length, lsns.length, sizes.length, deliveries.length, flags.length].every((n) => n === seqs.length && n >= count), 'entry columns differ in length');
    for (let i = 1; i < count; i++) assert(seqs[i - 1]! < seqs[i]!, 'entry columns are not in ascending seq order');
    const queue = new EntryQueue<M>();
    if (count === 0) return queue;
    queue.seqs = seqs;
    queue.lsns = lsns;
    queue.sizes = sizes;
    queue.deliveryCounts = deliveries;
    queue.flagBits = flags;
    let bytes = 0;
    for (let i = 0; i < count; i++) {
      flags[i]! &= ~EntryFlag.removed;
      bytes += sizes[i]!;
    }
    queue.end = count;
    queue.live = count;
    queue.liveBytes = bytes;
    if (held !== undefined && held.size > 0) queue.heldMessages = new Map(held);
    // Which entries were moved is not in the columns: the order can be trusted only if the LSNs ascend as they are.
    for (let i = 1; i < count && queue.lsnsAscend; i++) queue.lsnsAscend = lsns[i - 1]! < lsns[i]!;
    return queue;
  }

  private seqs: Float64Array = new Float64Array(initialCapacity);
  private lsns: Float64Array = new Float64Array(initialCapacity);
  private sizes: Uint32Array = new Uint32Array(initialCapacity);
  private deliveryCounts: Uint32Array = new Uint32Array(initialCapacity);
  private flagBits: Uint8Array = new Uint8Array(initialCapacity);
  private heldMessages: Map<number, M> | undefined = undefined;
  /** Index of the first slot that may be live. */
  private head = 0;
  /** One past the last used slot. */
  private end = 0;
  private live = 0;
  private liveBytes = 0;
  /**
   * True while the slots' original LSNs ascend with their seqs (messages are queued in log order); a moved
   * entry's LSN only grew since (relink), and its seq is in `moved`. Then the oldest entry in the log is
   * among the moved ones before the first live unmoved entry, or that entry: oldestInLog stops there
   * instead of reading every entry (it runs per snapshot and per metrics scrape, on millions of entries).
   * Any insert that cannot show the order keeps it false until the queue is empty.
   */
  private lsnsAscend = true;
  /** Seqs of relinked slots (kept for removed slots until compaction forgets them). */
  private moved: Set<number> | undefined = undefined;

  get size(): number {
    return this.live;
  }

  /** Sum of the live entries' payload sizes. */
  get bytes(): number {
    return this.liveBytes;
  }

  /** Adds an entry; seqs are unique. Appending (seq above every other) is the fast path. */
  insert(seq: number, lsn: number, size: number, flags: number, held?: M, deliveries = 0): void {
    let at = this.end > this.head && this.seqs[this.end - 1]! >= seq ? this.lowerBound(seq) : this.end;
    if (at < this.end && this.seqs[at] === seq) {
      assert((this.flagBits[at]! & EntryFlag.removed) !== 0, `seq ${seq} is already queued`);
      this.moved?.delete(seq);
      this.write(at, seq, lsn, size, flags, deliveries);
    } else if (at === this.head && this.head > 0) {
      this.head--;
      at = this.head;
      this.write(at, seq, lsn, size, flags, deliveries);
    } else {
      if (this.end === this.seqs.length) {
        const appending = at === this.end;
        this.makeRoom();
        at = appending ? this.end : this.lowerBound(seq);
      }
      if (at < this.end) this.shiftUp(at);
      this.end++;
      this.write(at, seq, lsn, size, flags, deliveries);
    }
    this.live++;
    this.liveBytes += size;
    if (held !== undefined) (this.heldMessages ??= new Map()).set(seq, held);
    if (this.lsnsAscend) this.lsnsAscend = held === undefined && this.inLsnOrder(at);
  }

  /** The slot at `at` keeps the original LSNs ascending: its neighbours (tombstones too) are unmoved and around it. */
  private inLsnOrder(at: number): boolean {
    const lsn = this.lsns[at]!;
    const before = at - 1;
    const after = at + 1;
    if (before >= this.head && (this.moved?.has(this.seqs[before]!) === true || this.lsns[before]! >= lsn)) return false;
    return !(after < this.end && (this.moved?.has(this.seqs[after]!) === true || this.lsns[after]! <= lsn));
  }

  has(seq: number): boolean {
    return this.indexOf(seq) >= 0;
  }

  get(seq: number): EntryView<M> | undefined {
    const index = this.indexOf(seq);
    return index < 0 ? undefined : this.viewAt(index);
  }

  /** Removes the entry; false when it is not queued. */
  delete(seq: number): boolean {
    const index = this.indexOf(seq);
    if (index < 0) return false;
    this.removeAt(index);
    return true;
  }

  /** The first (lowest seq) entry, removed. */
  shift(): EntryView<M> | undefined {
    this.skipRemoved();
    if (this.head >= this.end) return undefined;
    const view = this.viewAt(this.head);
    this.removeAt(this.head);
    return view;
  }

  first(): EntryView<M> | undefined {
    this.skipRemoved();
    return this.head < this.end ? this.viewAt(this.head) : undefined;
  }

  /** The first entry's seq, without making a view of it (hot paths). */
  firstSeq(): number | undefined {
    this.skipRemoved();
    return this.head < this.end ? this.seqs[this.head] : undefined;
  }

  /** Adds one to the delivery count; false when it is not queued. */
  markDelivered(seq: number): boolean {
    const index = this.indexOf(seq);
    if (index < 0) return false;
    this.deliveryCounts[index]! += 1;
    return true;
  }

  /** Entries in seq order. Removing the entry just yielded is allowed. */
  *entries(): IterableIterator<EntryView<M>> {
    for (let i = this.head; i < this.end; i++) {
      if ((this.flagBits[i]! & EntryFlag.removed) === 0) yield this.viewAt(i);
    }
  }

  *keys(): IterableIterator<number> {
    for (let i = this.head; i < this.end; i++) {
      if ((this.flagBits[i]! & EntryFlag.removed) === 0) yield this.seqs[i]!;
    }
  }

  /** The entry `seq`, if it still references the record at LSN `from`, references `to` instead (a moved message). */
  relink(seq: number, from: number, to: number): boolean {
    const index = this.indexOf(seq);
    if (index < 0 || this.lsns[index] !== from || this.heldMessages?.has(seq) === true) return false;
    this.lsns[index] = to;
    (this.moved ??= new Set()).add(seq);
    return true;
  }

  /**
   * The live entry with the smallest LSN that is in the log (held ones are not). Not always the first:
   * a moved message keeps its seq under a newer LSN.
   */
  oldestInLog(): EntryView<M> | undefined {
    let best = -1;
    const held = this.heldMessages;
    for (let i = this.head; i < this.end; i++) {
      if ((this.flagBits[i]! & EntryFlag.removed) !== 0 || (held !== undefined && held.has(this.seqs[i]!))) continue;
      if (best < 0 || this.lsns[i]! < this.lsns[best]!) best = i;
      // Every later entry's LSN is above this unmoved one's (see lsnsAscend).
      if (this.lsnsAscend && this.moved?.has(this.seqs[i]!) !== true) break;
    }
    return best < 0 ? undefined : this.viewAt(best);
  }

  /** The live entries in the log whose LSN is below `lsn`: [seq, lsn] pairs, at most `limit` (then undefined). */
  referencesBefore(lsn: number, limit: number): Array<[seq: number, lsn: number]> | undefined {
    const found: Array<[number, number]> = [];
    const held = this.heldMessages;
    for (let i = this.head; i < this.end; i++) {
      if (this.lsns[i]! >= lsn || (this.flagBits[i]! & EntryFlag.removed) !== 0 || (held !== undefined && held.has(this.seqs[i]!))) continue;
      if (found.length === limit) return undefined;
      found.push([this.seqs[i]!, this.lsns[i]!]);
    }
    return found;
  }

  /** How many live entries have a seq above `seq`, and their payload bytes, written into `tally` (no object per call: hot path). */
  tallyAfter<T extends { count: number; bytes: number }>(seq: number, tally: T): T {
    tally.count = 0;
    tally.bytes = 0;
    for (let i = this.upperBound(seq); i < this.end; i++) {
      if ((this.flagBits[i]! & EntryFlag.removed) !== 0) continue;
      tally.count++;
      tally.bytes += this.sizes[i]!;
    }
    return tally;
  }

  /** The first live entry with a seq above `seq`. */
  entryAfter(seq: number): EntryView<M> | undefined {
    let i = this.upperBound(seq);
    while (i < this.end && (this.flagBits[i]! & EntryFlag.removed) !== 0) i++;
    return i < this.end ? this.viewAt(i) : undefined;
  }

  /** Everything removed, returned in seq order. */
  clear(): EntryView<M>[] {
    const all = [...this.entries()];
    this.head = 0;
    this.end = 0;
    this.live = 0;
    this.liveBytes = 0;
    this.heldMessages = undefined;
    this.forgetOrder();
    return all;
  }

  /** Column copies of the live entries, for snapshots (no object per entry). */
  columns(): EntryColumns {
    this.compact();
    return {
      seqs: this.seqs.slice(0, this.end),
      lsns: this.lsns.slice(0, this.end),
      sizes: this.sizes.slice(0, this.end),
      deliveries: this.deliveryCounts.slice(0, this.end),
      flags: this.flagBits.slice(0, this.end),
    };
  }

  /**
   * The same columns as views, not copies: valid only until the queue changes next. The snapshot encoder
   * reads them synchronously (copies of a million entries' columns were garbage of 25 bytes an entry).
   */
  columnViews(): EntryColumns {
    this.compact();
    return {
      seqs: this.seqs.subarray(0, this.end),
      lsns: this.lsns.subarray(0, this.end),
      sizes: this.sizes.subarray(0, this.end),
      deliveries: this.deliveryCounts.subarray(0, this.end),
      flags: this.flagBits.subarray(0, this.end),
    };
  }

  /** The held messages by seq (snapshot encoding). */
  heldEntries(): ReadonlyMap<number, M> {
    return this.heldMessages ?? new Map();
  }

  private viewAt(index: number): EntryView<M> {
    const seq = this.seqs[index]!;
    return {
      seq,
      lsn: this.lsns[index]!,
      size: this.sizes[index]!,
      deliveries: this.deliveryCounts[index]!,
      flags: this.flagBits[index]!,
      held: this.heldMessages?.get(seq),
    };
  }

  private write(index: number, seq: number, lsn: number, size: number, flags: number, deliveries: number): void {
    this.seqs[index] = seq;
    this.lsns[index] = lsn;
    this.sizes[index] = size;
    this.deliveryCounts[index] = deliveries;
    this.flagBits[index] = flags & ~EntryFlag.removed;
  }

  private removeAt(index: number): void {
    this.flagBits[index]! |= EntryFlag.removed;
    this.live--;
    this.liveBytes -= this.sizes[index]!;
    this.heldMessages?.delete(this.seqs[index]!);
    this.skipRemoved();
    if (this.live === 0) {
      this.head = 0;
      this.end = 0;
      this.forgetOrder();
    } else if (this.end - this.head > 64 && this.end - this.head > 2 * this.live) {
      this.compact();
    }
  }

  /** An empty queue has every order again. */
  private forgetOrder(): void {
    this.lsnsAscend = true;
    this.moved = undefined;
  }

  private skipRemoved(): void {
    while (this.head < this.end && (this.flagBits[this.head]! & EntryFlag.removed) !== 0) this.head++;
    while (this.end > this.head && (this.flagBits[this.end - 1]! & EntryFlag.removed) !== 0) this.end--;
  }

  /** Index of a live entry with this seq, or -1. */
  private indexOf(seq: number): number {
    const index = this.lowerBound(seq);
    return index < this.end && this.seqs[index] === seq && (this.flagBits[index]! & EntryFlag.removed) === 0 ? index : -1;
  }

  /** First slot in [head, end) whose seq is >= seq (tombstones keep their seqs, so the order holds). */
  private lowerBound(seq: number): number {
    let low = this.head;
    let high = this.end;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.seqs[mid]! < seq) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  private upperBound(seq: number): number {
    let low = this.head;
    let high = this.end;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.seqs[mid]! <= seq) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  private shiftUp(at: number): void {
    this.seqs.copyWithin(at + 1, at, this.end);
    this.lsns.copyWithin(at + 1, at, this.end);
    this.sizes.copyWithin(at + 1, at, this.end);
    this.deliveryCounts.copyWithin(at + 1, at, this.end);
    this.flagBits.copyWithin(at + 1, at, this.end);
  }

  /** Compacts in place when that frees enough, else grows by half. */
  private makeRoom(): void {
    if (this.live + 1 <= (this.seqs.length * 3) >> 2) {
      this.compact();
      if (this.end < this.seqs.length) return;
    }
    this.resize(Math.max(initialCapacity, this.seqs.length + (this.seqs.length >> 1) + 1));
  }

  /** Moves the live entries to the front, dropping tombstones. */
  private compact(): void {
    let to = 0;
    for (let from = this.head; from < this.end; from++) {
      if ((this.flagBits[from]! & EntryFlag.removed) !== 0) continue;
      if (to !== from) {
        this.seqs[to] = this.seqs[from]!;
        this.lsns[to] = this.lsns[from]!;
        this.sizes[to] = this.sizes[from]!;
        this.deliveryCounts[to] = this.deliveryCounts[from]!;
        this.flagBits[to] = this.flagBits[from]!;
      }
      to++;
    }
    this.head = 0;
    this.end = to;
    if (this.moved !== undefined) {
      const live = new Set<number>();
      for (const seq of this.moved) if (this.indexOf(seq) >= 0) live.add(seq);
      this.moved = live.size > 0 ? live : undefined;
    }
    if (this.seqs.length > initialCapacity * 4 && to * 4 < this.seqs.length) this.resize(Math.max(initialCapacity, to * 2));
  }

  private resize(capacity: number): void {
    const grow = <T extends Float64Array | Uint32Array | Uint8Array>(old: T, make: (n: number) => T): T => {
      const next = make(capacity);
      next.set(old.subarray(this.head, this.end) as never);
      return next;
    };
    this.seqs = grow(this.seqs, (n) => new Float64Array(n));
    this.lsns = grow(this.lsns, (n) => new Float64Array(n));
    this.sizes = grow(this.sizes, (n) => new Uint32Array(n));
    this.deliveryCounts = grow(this.deliveryCounts, (n) => new Uint32Array(n));
    this.flagBits = grow(this.flagBits, (n) => new Uint8Array(n));
    this.end -= this.head;
    this.head = 0;
  }
}
