/**
 * The JetStream log's records in memory, by LSN: the encoded frames (record.ts,
 * the same bytes as in a segment) of every LSN from the first the stream still
 * holds to the last appended. The broker reads records synchronously (replay,
 * a queued message's payload on delivery), and a read from JetStream is a
 * network round trip, so the log keeps its own copy, as a replica would.
 *
 * A slot may be empty: LSN = stream sequence, and a writer's fence message
 * (jetstream-log.ts) takes a sequence without being a record.
 *
 * Memory is the price: everything from the oldest message a queue still holds
 * (or the newest snapshot) stays here; retention (stream purge) frees it.
 */
import { assert } from '../../assert.js';
import type { Lsn } from '../record.js';

export class HeldFrames {
  /** frames[i] is the frame of LSN first + i (undefined: a fence, not a record). */
  private frames: Array<Buffer | undefined> = [];
  private dropped = 0;

  constructor(private first: Lsn) {
    assert(Number.isSafeInteger(first) && first >= 1, 'the first LSN is a positive integer');
  }

  /** The first LSN held (the next one when nothing is). */
  get firstLsn(): Lsn {
    return this.first;
  }

  /** The LSN the next slot gets. */
  get nextLsn(): Lsn {
    return this.first + this.frames.length - this.dropped;
  }

  /** Takes the next LSN: a record's frame, or undefined for a fence message. */
  push(lsn: Lsn, frame: Buffer | undefined): void {
    assert(lsn === this.nextLsn, `LSN ${lsn} held out of order (next is ${this.nextLsn})`);
    this.frames.push(frame);
  }

  /** The frame of `lsn`; undefined when it is outside the held range or a fence. */
  get(lsn: Lsn): Buffer | undefined {
    if (lsn < this.first || lsn >= this.nextLsn) return undefined;
    return this.frames[lsn - this.first + this.dropped];
  }

  /** Starts over at `lsn`, past everything held: a purge (another node's retention) removed what lay between. */
  skipTo(lsn: Lsn): void {
    assert(lsn >= this.nextLsn, 'frames are skipped forward only');
    this.frames = [];
    this.dropped = 0;
    this.first = lsn;
  }

  /** Forgets every LSN below `lsn` (retention), never past the next one. */
  dropBelow(lsn: Lsn): void {
    const target = Math.min(lsn, this.nextLsn);
    if (target <= this.first) return;
    // Release the frames now, not only at the next compaction.
    for (let i = this.dropped; i < this.dropped + target - this.first; i++) this.frames[i] = undefined;
    this.dropped += target - this.first;
    this.first = target;
    // Compact once the dropped prefix is as long as what is held: amortized O(1) per LSN.
    if (this.dropped > 1024 && this.dropped * 2 > this.frames.length) {
      this.frames = this.frames.slice(this.dropped);
      this.dropped = 0;
    }
  }
}
