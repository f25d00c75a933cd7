/**
 * The dense offset index of a segment: for each record, in LSN order, the
 * byte offset of its frame in the segment file (record i of a segment is LSN
 * firstLsn + i). Frames follow each other with no gap, so the offsets also
 * give every frame's length (the next offset, or `end` for the last frame):
 * reading a record by LSN is one positioned read of exactly its frame.
 *
 * One u32 per record (4 bytes of RAM; up to twice that while the array
 * grows, trimmed when a segment is sealed), widened to f64 (every integer
 * below 2^53 is exact) the first time an offset passes 4 GiB: segments can be
 * that large (segmentBytesMax goes up to 2^40), the default ones are far
 * smaller. A typed array holds the numbers unboxed in one
 * allocation the garbage collector never scans. A sparse index (every n-th
 * frame, as Kafka keeps) would cost less RAM but a scan per read; a queued
 * message's reference is read exactly once per delivery, so the dense index
 * keeps that at one read. The index of every segment this process wrote or
 * read stays in memory until retention removes the segment: 4 MB per million
 * records held, so retention is what bounds it.
 *
 * Who fills it: the group commit as batches are written (a batch notes its
 * frames' offsets from the batch start; they are shifted by the position the
 * batch is written at), recovery for the segments it scans at start-up, and
 * `indexSegmentFrames` below, once, for a segment read before it had an index
 * (the history before the newest snapshot, which start-up does not scan).
 */
import { assert } from '../assert.js';
import type { LogFileSystem } from './file-system.js';
import { frameLength, frameLsn, isPlausibleFrameLength, type Lsn } from './record.js';

const capacityInitial = 1024;
/** What a frame-length scan reads of a frame: the checksum, length and LSN fields. */
const frameProbeBytes = 20;
const scanChunkBytes = 1024 * 1024;
/** The largest offset a u32 slot holds. */
const u32Max = 0xffff_ffff;

export class FrameOffsets {
  private offsets: Uint32Array | Float64Array = new Uint32Array(capacityInitial);
  private countValue = 0;
  private endValue: number;
  /** Set when an index scan could not follow the frames to the segment's end: why, and where. */
  damage: { readonly offset: number; readonly reason: string } | undefined = undefined;

  /** `start`: where the first frame goes (after the segment header, or 0 in a batch). */
  constructor(private readonly start: number) {
    this.endValue = start;
  }

  /** Frames indexed. */
  get count(): number {
    return this.countValue;
  }

  /** Where the last indexed frame ends (where the next one starts). */
  get end(): number {
    return this.endValue;
  }

  /** Notes the next frame, of `length` bytes, right after the previous one. */
  add(length: number): void {
    if (this.countValue === this.offsets.length) this.grow(this.countValue + 1);
    this.widenFor(this.endValue);
    this.offsets[this.countValue++] = this.endValue;
    this.endValue += length;
  }

  /** Notes the frames of `batch`, written at file offset `position`, which must be where this index ends. */
  addShifted(batch: FrameOffsets, position: number): void {
    assert(position === this.endValue, 'a batch is written somewhere other than right after the indexed frames');
    const total = this.countValue + batch.countValue;
    if (total > this.offsets.length) this.grow(total);
    if (batch.countValue > 0) this.widenFor(batch.offsets[batch.countValue - 1]! + position);
    for (let i = 0; i < batch.countValue; i++) this.offsets[this.countValue + i] = batch.offsets[i]! + position;
    this.countValue = total;
    this.endValue = batch.endValue + position;
  }

  offsetOf(index: number): number {
    assert(index >= 0 && index < this.countValue, 'frame index out of range');
    return this.offsets[index]!;
  }

  lengthOf(index: number): number {
    const next = index + 1 < this.countValue ? this.offsets[index + 1]! : this.endValue;
    return next - this.offsetOf(index);
  }

  /** Forgets every frame from `count` on (an append rolled back). */
  truncate(count: number): void {
    assert(count >= 0 && count <= this.countValue, 'cannot truncate an index to more frames than it holds');
    if (count < this.countValue) this.endValue = this.offsets[count]!;
    this.countValue = count;
  }

  clear(): void {
    this.truncate(0);
  }

  /** Gives back the room kept for growth: the segment is sealed. */
  trim(): void {
    if (this.offsets.length > this.countValue) this.offsets = this.offsets.slice(0, Math.max(this.countValue, 1));
  }

  private grow(needed: number): void {
    const length = Math.max(needed, this.offsets.length * 2);
    const bigger = this.offsets instanceof Uint32Array ? new Uint32Array(length) : new Float64Array(length);
    bigger.set(this.offsets.subarray(0, this.countValue));
    this.offsets = bigger;
  }

  /** Doubles the slots' width before an offset a u32 cannot hold is stored (a u32 store would wrap silently). */
  private widenFor(offset: number): void {
    if (offset <= u32Max || this.offsets instanceof Float64Array) return;
    const wide = new Float64Array(this.offsets.length);
    wide.set(this.offsets.subarray(0, this.countValue));
    this.offsets = wide;
  }
}

/**
 * Indexes a segment nobody indexed yet by one sequential pass in big chunks,
 * reading only each frame's length and LSN fields (checksums are verified
 * when a record is read). Stops at the first frame whose length is
 * implausible, runs past `end` or holds the wrong LSN, and notes that as the
 * index's damage: records from there on cannot be located.
 */
export function indexSegmentFrames(fileSystem: LogFileSystem, fd: number, start: number, end: number, firstLsn: Lsn): FrameOffsets {
  const index = new FrameOffsets(start);
  const chunk = Buffer.allocUnsafe(Math.max(frameProbeBytes, Math.min(scanChunkBytes, end - start)));
  let chunkStart = start;
  let chunkBytes = 0;
  let position = start;
  let lsn = firstLsn;
  while (position < end) {
    if (position + frameProbeBytes > chunkStart + chunkBytes) {
      chunkStart = position;
      chunkBytes = readUpTo(fileSystem, fd, chunk, Math.min(chunk.length, end - position), position);
      if (chunkBytes < frameProbeBytes) {
        index.damage = { offset: position, reason: `${end - position} bytes left at the end of the segment, too few for a frame` };
        break;
      }
    }
    const at = position - chunkStart;
    const length = frameLength(chunk, at);
    const reason = !isPlausibleFrameLength(length) ? `implausible frame length ${length}`
      : position + length > end ? `a frame of ${length} bytes runs past the end of the segment`
        : frameLsn(chunk, at) !== lsn ? `the frame holds LSN ${frameLsn(chunk, at)} where ${lsn} was expected` : undefined;
    if (reason !== undefined) {
      index.damage = { offset: position, reason };
      break;
    }
    index.add(length);
    position += length;
    lsn += 1;
  }
  index.trim();
  return index;
}

/** Reads up to `length` bytes at `position`, continuing after short reads; fewer only at the end of the file. */
export function readUpTo(fileSystem: LogFileSystem, fd: number, buffer: Buffer, length: number, position: number): number {
  let done = 0;
  while (done < length) {
    const read = fileSystem.readSync(fd, buffer, done, length - done, position + done);
    if (read === 0) break;
    done += read;
  }
  return done;
}
