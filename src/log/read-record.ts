/**
 * Reading one record by LSN from its segment (SegmentedLog.readRecord): the
 * segment's offset index (frame-offsets.ts) gives the frame's place and
 * length, one positioned read fetches exactly that frame, its checksum, length
 * and LSN are verified, and its body is decoded as `read` decodes it.
 *
 * Frames are fetched through read-ahead windows (read-windows.ts): a backlog
 * drained in log order takes one positioned read per window of frames, not
 * one per message.
 *
 * A segment read before it had an index (the history before the newest
 * snapshot) is indexed on the spot, once. The descriptors of the last few
 * segments read stay open, so a read costs one pread, not an open and a close
 * too; the log closes a segment's descriptor before retention removes it.
 *
 * What can go wrong, as the caller (a consumer being served) needs to tell
 * it: damage in the frame (or frames that cannot be followed to it) is a
 * CorruptRecordError naming the segment and LSN; a failing file system call
 * is a RecordReadError. Neither changes the log.
 */
import { join } from 'node:path';
import { assert } from '../assert.js';
import { CorruptRecordError, RecordReadError } from './errors.js';
import type { LogFileSystem } from './file-system.js';
import { indexSegmentFrames, readUpTo, type FrameOffsets } from './frame-offsets.js';
import { ReadWindows } from './read-windows.js';
import { decodeFrame, frameProblem, type LogRecord, type Lsn } from './record.js';
import { segmentHeaderBytes, type SegmentState } from './segment.js';

/** Segment descriptors kept open for reads (within descriptor-budget.ts's reserve for the broker itself). */
export const readDescriptorsMax = 8;
const scratchBytesInitial = 64 * 1024;
/** A frame bigger than this is read into a buffer of its own, so one big record does not pin its size for good. */
const scratchBytesRetainedMax = 1024 * 1024;

/** One frame's bytes, as three views of the same memory: Buffer (checksum), Uint8Array and DataView (decoder). */
interface FrameBuffer {
  readonly buffer: Buffer;
  readonly bytes: Uint8Array;
  readonly view: DataView;
}

export class RecordFetcher {
  /** Open read descriptors by segment file, least recently used first. */
  private readonly descriptors = new Map<string, number>();
  /** The segment read last and its descriptor: most reads go to the same segment as the one before. */
  private lastFile: string | undefined = undefined;
  private lastFd = -1;
  private scratch: FrameBuffer = frameBufferOf(Buffer.allocUnsafe(scratchBytesInitial));
  private readonly windows: ReadWindows;

  constructor(
    private readonly fileSystem: LogFileSystem,
    private readonly dir: string,
  ) {
    this.windows = new ReadWindows(fileSystem);
  }

  /** The record at `lsn`, which the caller located in `segment` (firstLsn <= lsn <= lastLsn, written). */
  read(segment: SegmentState, lsn: Lsn): LogRecord {
    const fd = this.descriptorOf(segment, lsn);
    const offsets = segment.offsets ?? this.indexOnce(segment, fd, lsn);
    const index = lsn - segment.firstLsn;
    if (index >= offsets.count) throw unlocatable(segment, offsets, lsn);
    const offset = offsets.offsetOf(index);
    const length = offsets.lengthOf(index);
    const { frame, at, read } = this.fetch(segment, fd, lsn, offset, length, offsets.end);
    if (read < length) throw new CorruptRecordError(segment.file, lsn, offset, `the file ends ${length - read} bytes into the frame`);
    const problem = frameProblem(frame.buffer, frame.view, at, length, lsn);
    if (problem !== undefined) throw new CorruptRecordError(segment.file, lsn, offset, problem);
    return decodeFrame(frame.bytes, frame.view, at, length);
  }

  /** The frame's bytes: in a read-ahead window, or (a frame larger than a window) read on its own. `read`: how many of them the file had. */
  private fetch(segment: SegmentState, fd: number, lsn: Lsn, offset: number, length: number, end: number): { frame: FrameBuffer; at: number; read: number } {
    try {
      const window = this.windows.holding(segment.file, fd, offset, length, end);
      if (window !== undefined) return { frame: window, at: offset - window.start, read: Math.min(length, window.start + window.filled - offset) };
      const frame = length <= this.scratch.buffer.length ? this.scratch : this.bufferFor(length);
      return { frame, at: 0, read: readUpTo(this.fileSystem, fd, frame.buffer, length, offset) };
    } catch (error) {
      throw new RecordReadError(segment.file, lsn, error);
    }
  }

  /** Closes the segment's read descriptor, if open: retention is about to remove it. */
  forget(file: string): void {
    this.windows.forget(file);
    const fd = this.descriptors.get(file);
    if (fd === undefined) return;
    this.descriptors.delete(file);
    if (file === this.lastFile) this.lastFile = undefined;
    this.fileSystem.closeSync(fd);
  }

  close(): void {
    for (const file of [...this.descriptors.keys()]) this.forget(file);
  }

  private descriptorOf(segment: SegmentState, lsn: Lsn): number {
    if (segment.file === this.lastFile) return this.lastFd;
    const fd = this.descriptorFromTable(segment, lsn);
    this.lastFile = segment.file;
    this.lastFd = fd;
    return fd;
  }

  private descriptorFromTable(segment: SegmentState, lsn: Lsn): number {
    const open = this.descriptors.get(segment.file);
    if (open !== undefined) {
      // Most recently used goes last, so the first entry is the one to close when the table is full.
      this.descriptors.delete(segment.file);
      this.descriptors.set(segment.file, open);
      return open;
    }
    let fd: number;
    try {
      fd = this.fileSystem.openSync(join(this.dir, segment.file), 'r');
    } catch (error) {
      throw new RecordReadError(segment.file, lsn, error);
    }
    if (this.descriptors.size >= readDescriptorsMax) this.forget(this.descriptors.keys().next().value!);
    this.descriptors.set(segment.file, fd);
    return fd;
  }

  private indexOnce(segment: SegmentState, fd: number, lsn: Lsn): FrameOffsets {
    try {
      segment.offsets = indexSegmentFrames(this.fileSystem, fd, segmentHeaderBytes, segment.bytes, segment.firstLsn);
    } catch (error) {
      throw new RecordReadError(segment.file, lsn, error);
    }
    return segment.offsets;
  }

  private bufferFor(length: number): FrameBuffer {
    if (length > scratchBytesRetainedMax) return frameBufferOf(Buffer.allocUnsafe(length));
    this.scratch = frameBufferOf(Buffer.allocUnsafe(Math.min(scratchBytesRetainedMax, Math.max(length, this.scratch.buffer.length * 2))));
    return this.scratch;
  }
}

function frameBufferOf(buffer: Buffer): FrameBuffer {
  return { buffer, bytes: new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.length), view: new DataView(buffer.buffer, buffer.byteOffset, buffer.length) };
}

/** The record the caller asked for lies past what the segment's index could locate. */
function unlocatable(segment: SegmentState, offsets: FrameOffsets, lsn: Lsn): CorruptRecordError {
  const reachedLsn = segment.firstLsn + offsets.count;
  if (offsets.damage !== undefined) {
    return new CorruptRecordError(segment.file, lsn, offsets.damage.offset, `the segment's frames cannot be followed from LSN ${reachedLsn} on: ${offsets.damage.reason}`);
  }
  return new CorruptRecordError(segment.file, lsn, offsets.end, `the segment ends at LSN ${reachedLsn - 1} but LSN ${segment.lastLsn} was expected (records are missing)`);
}

/** The record in an encoded frame still in memory (a batch not written yet), verified as a read from disk is. */
export function decodeBatchFrame(frame: { buffer: Buffer; offset: number; length: number }, lsn: Lsn): LogRecord {
  const { buffer, offset, length } = frame;
  const views = frameBufferOf(buffer);
  // The append path verifies the same frames again before writing them (assertFramesIntact).
  assert(frameProblem(buffer, views.view, offset, length, lsn) === undefined, 'a batch frame changed after it was encoded');
  return decodeFrame(views.bytes, views.view, offset, length);
}
