/**
 * The JetStream log's records in memory, by LSN: the encoded frames (record.ts,
 * the same bytes as in a segment) of every LSN from the first the stream still
 * holds to the last appended, and which stream message holds which LSNs. The
 * broker reads records synchronously (replay, a queued message's payload on
 * delivery), and a read from JetStream is a network round trip, so the log
 * keeps its own copy, as a replica would.
 *
 * A stream message holds one or more consecutive LSNs (a batch, see
 * jetstream-log.ts): message sequences and LSNs are two counters, and the
 * message index maps one to the other. Retention purges whole messages (by
 * sequence), and a reader continues after the last message it read (by
 * sequence). A slot may be empty: a writer's fence message takes an LSN
 * without being a record.
 *
 * Memory is the price: everything from the oldest message a queue still holds
 * (or the newest snapshot) stays here; retention (stream purge) frees it.
 */
import { assert } from '../../assert.js';
import type { Lsn } from '../record.js';

/**
 * An array indexed from `first` on that forgets its front: get and push are O(1), and dropping the front is
 * amortized O(1) per element (the prefix is cut off once it is as long as what is kept).
 */
class Window<T> {
  private items: Array<T | undefined> = [];
  private dropped = 0;

  constructor(public first: number) {}

  get next(): number {
    return this.first + this.items.length - this.dropped;
  }

  push(item: T): void {
    this.items.push(item);
  }

  get(index: number): T | undefined {
    if (index < this.first || index >= this.next) return undefined;
    return this.items[index - this.first + this.dropped];
  }

  dropBelow(index: number): void {
    const target = Math.min(index, this.next);
    if (target <= this.first) return;
    // Release the items now, not only at the next compaction.
    for (let i = this.dropped; i < this.dropped + target - this.first; i++) this.items[i] = undefined;
    this.dropped += target - this.first;
    this.first = target;
    if (this.dropped > 1024 && this.dropped * 2 > this.items.length) {
      this.items = this.items.slice(this.dropped);
      this.dropped = 0;
    }
  }

  restartAt(index: number): void {
    this.items = [];
    this.dropped = 0;
    this.first = index;
  }
}

export class HeldFrames {
  /** Frames by LSN (undefined: a fence, not a record). */
  private readonly frames: Window<Buffer | undefined>;
  /** The first LSN of each message held, by stream sequence. */
  private readonly messages: Window<Lsn>;
  /** The LSN after the last message's: LSNs from here to nextLsn are a writer's, in no message yet. */
  private endOfMessages: Lsn;
  /** False until the first message read says where LSNs are: a stream whose front was purged starts at an LSN no counter gives. */
  private lsnKnown: boolean;

  /**
   * Holds nothing yet; the next message read is the stream's at `firstSequence`. `firstLsn` is the LSN the next
   * frame gets when known (an empty stream); undefined: the first message read tells.
   */
  constructor(firstSequence: number, firstLsn: Lsn | undefined) {
    assert(Number.isSafeInteger(firstSequence) && firstSequence >= 1, 'the first sequence is a positive integer');
    assert(firstLsn === undefined || (Number.isSafeInteger(firstLsn) && firstLsn >= 1), 'the first LSN is a positive integer');
    this.messages = new Window(firstSequence);
    // Every message holds at least one LSN, so a message's first LSN is at least its sequence: a lower bound meanwhile.
    this.frames = new Window(firstLsn ?? firstSequence);
    this.lsnKnown = firstLsn !== undefined;
    this.endOfMessages = this.frames.first;
  }

  /** The first LSN held (the next one when nothing is). */
  get firstLsn(): Lsn {
    return this.frames.first;
  }

  /** The LSN the next slot gets (a lower bound until the first message is held: see expectedLsn). */
  get nextLsn(): Lsn {
    return this.frames.next;
  }

  /** The LSN the next message must start at; undefined before the first message when the stream's front was purged. */
  get expectedLsn(): Lsn | undefined {
    return this.lsnKnown ? this.frames.next : undefined;
  }

  /** The sequence of the first message held (nextSequence when none is). */
  get firstSequence(): number {
    return this.messages.first;
  }

  /** The sequence of the next message (the one a reader reads next, the one a writer's next message takes). */
  get nextSequence(): number {
    return this.messages.next;
  }

  /** Holds the message at nextSequence: the frames of its LSNs from `firstLsn` on (undefined for a fence). */
  holdMessage(sequence: number, firstLsn: Lsn, frames: ReadonlyArray<Buffer | undefined>): void {
    assert(frames.length > 0, 'a message holds at least one LSN');
    if (!this.lsnKnown) {
      assert(firstLsn >= this.frames.next, 'a message\'s first LSN is at least its sequence');
      this.restartAt(sequence, firstLsn);
    }
    assert(firstLsn === this.frames.next, 'a message held out of LSN order');
    for (const frame of frames) this.frames.push(frame);
    this.endMessage(sequence, firstLsn + frames.length - 1);
  }

  /** Notes that the message at `sequence` holds the LSNs after the previous message's up to `lastLsn` (a writer pushed their frames at append). */
  endMessage(sequence: number, lastLsn: Lsn): void {
    assert(sequence === this.nextSequence, 'a message held out of sequence order');
    assert(this.lsnKnown && lastLsn >= this.endOfMessages && lastLsn < this.frames.next, 'a message holds LSNs taken and in no other message');
    this.messages.push(this.endOfMessages);
    this.endOfMessages = lastLsn + 1;
  }

  /** Takes the next LSN for a record's frame (a writer's append; endMessage says later which message holds it). */
  push(lsn: Lsn, frame: Buffer): void {
    assert(this.lsnKnown && lsn === this.nextLsn, 'an LSN held out of order');
    this.frames.push(frame);
  }

  /** The frame of `lsn`; undefined when it is outside the held range or a fence. */
  get(lsn: Lsn): Buffer | undefined {
    return this.frames.get(lsn);
  }

  /** The sequence of the held message that holds `lsn`; undefined when none does (not held, or not in a message yet). */
  sequenceHolding(lsn: Lsn): number | undefined {
    let low = this.messages.first;
    let high = this.messages.next - 1;
    if (high < low || lsn < this.frames.first || lsn >= this.endOfMessages || lsn < this.messages.get(low)!) return undefined;
    // The last message whose first LSN is at most `lsn`.
    while (low < high) {
      const middle = Math.ceil((low + high) / 2);
      if (this.messages.get(middle)! <= lsn) low = middle;
      else high = middle - 1;
    }
    return low;
  }

  /** Starts over at the message `sequence` holding LSNs from `firstLsn` on: a purge (another node's retention) removed what lay between. */
  skipTo(sequence: number, firstLsn: Lsn): void {
    assert(sequence >= this.nextSequence && firstLsn >= this.nextLsn, 'frames are skipped forward only');
    this.restartAt(sequence, firstLsn);
  }

  /** Forgets every message below `sequence` and its LSNs (retention), never past the next one. */
  dropBelowSequence(sequence: number): void {
    const target = Math.min(sequence, this.nextSequence);
    if (target <= this.messages.first) return;
    const firstKept = this.messages.get(target) ?? this.endOfMessages;
    this.messages.dropBelow(target);
    this.frames.dropBelow(firstKept);
  }

  private restartAt(sequence: number, firstLsn: Lsn): void {
    this.frames.restartAt(firstLsn);
    this.messages.restartAt(sequence);
    this.endOfMessages = firstLsn;
    this.lsnKnown = true;
  }
}
