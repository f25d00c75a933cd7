/**
 * Verifies every frame of one segment and says which LSNs are bad, for
 * `cairn inspect verify` (reader.ts) and the broker's background check of the
 * log's history (history.ts).
 *
 * Unlike recovery's scan, it carries on after a bad frame from the next valid
 * frame found after it, so one flipped bit shows as one bad range. It runs in
 * slices bounded by a deadline, so a caller on the event loop can yield
 * between them; a slice still ends only between frames (a frame is at most
 * frameBytesMax), and the search for the next valid frame after a bad one is
 * one synchronous step (it runs only on damage).
 */
import { cursorBad, cursorFrame, findValidFrameAfter, SegmentCursor, type BadFrame } from './cursor.js';
import type { LogFileSystem } from './file-system.js';
import type { Lsn } from './record.js';
import { judgeBadFrame } from './recovery.js';
import { segmentHeaderBytes, type SegmentTimestamps } from './segment.js';

export interface BadRange {
  /** The first LSN that cannot be read. */
  readonly lsn: Lsn;
  readonly offset: number;
  /** What is wrong, and where valid records resume (or that none do). */
  readonly reason: string;
  /** The first valid frame after the bad one; undefined when the rest of the segment cannot be read. */
  readonly resumesAt: { readonly offset: number; readonly lsn: Lsn } | undefined;
}

/** Frames between two looks at the clock: reading the clock costs more than verifying a small frame. */
const framesPerClockCheck = 64;

export class SegmentVerifier {
  records = 0;
  /** The last LSN read; firstLsn - 1 while none was. */
  lastLsn: Lsn;
  timestamps: SegmentTimestamps | undefined = undefined;
  readonly bad: BadRange[] = [];
  private cursor: SegmentCursor;
  private finished = false;

  /**
   * `limit`: frames end here. `isLast`: the segment is the log's last, where
   * a bad frame with nothing valid after it is a torn tail, not damage.
   */
  constructor(
    private readonly fileSystem: LogFileSystem,
    private readonly fd: number,
    firstLsn: Lsn,
    private readonly limit: number,
    private readonly isLast: boolean,
  ) {
    this.lastLsn = firstLsn - 1;
    this.cursor = new SegmentCursor(fileSystem, fd, segmentHeaderBytes, limit, firstLsn);
  }

  /** Verifies frames until the segment is done (true) or `deadline` (performance.now()) has passed (false). */
  run(deadline = Infinity): boolean {
    let frames = 0;
    while (!this.finished) {
      frames += 1;
      if (frames % framesPerClockCheck === 0 && performance.now() >= deadline) return false;
      const status = this.cursor.next();
      if (status === cursorFrame) this.noteFrame();
      else if (status === cursorBad) this.afterBadFrame(this.cursor.bad!);
      else this.finished = true;
    }
    return true;
  }

  private noteFrame(): void {
    const { lsn, timestamp } = this.cursor;
    this.records += 1;
    this.lastLsn = lsn;
    if (this.timestamps === undefined) this.timestamps = { first: timestamp, last: timestamp, max: timestamp };
    else {
      this.timestamps.last = timestamp;
      if (timestamp > this.timestamps.max) this.timestamps.max = timestamp;
    }
  }

  private afterBadFrame(bad: BadFrame): void {
    const resume = findValidFrameAfter(this.fileSystem, this.fd, bad.offset + 1, this.limit, bad.lsn);
    if (this.isLast && judgeBadFrame(true, bad, resume !== undefined) === 'torn-tail') {
      this.finished = true;
      return;
    }
    const rest = resume === undefined ? `; the remaining ${this.limit - bad.offset} bytes of the segment cannot be read` : `; valid records resume at LSN ${resume.lsn} (byte offset ${resume.offset})`;
    this.bad.push({ lsn: bad.lsn, offset: bad.offset, reason: bad.reason + rest, resumesAt: resume });
    if (resume === undefined) {
      this.finished = true;
      return;
    }
    this.lastLsn = resume.lsn - 1;
    this.cursor = new SegmentCursor(this.fileSystem, this.fd, resume.offset, this.limit, resume.lsn);
  }
}
