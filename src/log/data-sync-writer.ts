/**
 * The lone batch's one-call write (group-commit.ts): a second descriptor of
 * the active segment, opened with O_DSYNC, through which a batch that is the
 * only thing to make durable is written and made durable by the same pwrite.
 *
 * POSIX's synchronized I/O data integrity completion: a write on an O_DSYNC
 * descriptor returns only once its data, and the metadata needed to read it
 * back (a grown file size), are on stable storage, as after write + fdatasync
 * of the same bytes (Linux: the write ends in vfs_fsync_range over the range
 * written, datasync; ext4 and XFS flush the device's cache as fdatasync does).
 * The log takes this path only when nothing else written is waiting for a
 * sync (group-commit.ts), so the range written is all there is to make durable:
 * the LSNs it carries are durable when the call returns, and not before.
 * The bytes and offsets are those of the two-call path; recovery sees no
 * difference. A failed or short write is handled as any segment write.
 *
 * The descriptor is opened on first use for the active segment and closed
 * when the log rolls past it or closes. One that cannot be opened (no
 * O_DSYNC on the platform, descriptors exhausted) is not an error: the batch
 * goes the two-call way (write, then fdatasync), and the open is retried for
 * the next segment only.
 */
import * as fs from 'node:fs';
import { assert } from '../assert.js';
import { nodeFileSystem, writeFullySync } from './file-system.js';

/** O_DSYNC where the platform has it (Linux, macOS); undefined elsewhere (Windows). */
const dataSyncFlag: number | undefined = fs.constants.O_DSYNC;

export class DataSyncWriter {
  private fd: number | undefined;
  /** The segment file the descriptor is for, or that could not be opened. */
  private path: string | undefined;

  /** Whether the segment file `path` can be written this way (opens its descriptor on first use). */
  availableFor(path: string): boolean {
    return this.descriptorFor(path) !== undefined;
  }

  /**
   * Writes `length` bytes of `buffer` at `position` of the segment availableFor() was last asked about, and
   * returns once they are durable: null, or the error of a failed write.
   */
  writeDurably(buffer: Buffer, length: number, position: number): unknown {
    assert(this.fd !== undefined, 'a durable write without an O_DSYNC descriptor');
    return writeFullySync(nodeFileSystem, this.fd, buffer, length, position);
  }

  /** The descriptor of the segment is no longer needed (the log rolled past it, or closes). */
  close(): void {
    const fd = this.fd;
    this.fd = undefined;
    this.path = undefined;
    if (fd !== undefined) fs.closeSync(fd);
  }

  private descriptorFor(path: string): number | undefined {
    if (this.path === path) return this.fd;
    this.close();
    this.path = path;
    if (dataSyncFlag === undefined) return undefined;
    try {
      this.fd = fs.openSync(path, fs.constants.O_WRONLY | dataSyncFlag);
    } catch {
      // No descriptor (EMFILE, ENFILE) or no O_DSYNC here: this segment goes the two-call way.
      this.fd = undefined;
    }
    return this.fd;
  }
}
