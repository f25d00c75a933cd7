/**
 * The two file-system calls on the append hot path, behind an interface so a
 * test can inject failures (EIO from fdatasync, ENOSPC from write) without
 * touching the real disk's behaviour. Callback style on purpose: it is the
 * cheapest way into libuv's thread pool, and the hot path makes two such calls
 * per group commit.
 */
import * as fs from 'node:fs';

export type WriteCallback = (error: NodeJS.ErrnoException | null, bytesWritten: number) => void;
export type SyncCallback = (error: NodeJS.ErrnoException | null) => void;

export interface LogFileSystem {
  write(fd: number, buffer: Buffer, offset: number, length: number, position: number, callback: WriteCallback): void;
  fdatasync(fd: number, callback: SyncCallback): void;
}

export const nodeFileSystem: LogFileSystem = {
  write: (fd, buffer, offset, length, position, callback) => fs.write(fd, buffer, offset, length, position, callback),
  fdatasync: (fd, callback) => fs.fdatasync(fd, callback),
};

/** Writes all `length` bytes at `position`, continuing after a short write; a zero-byte write is an error. */
export function writeFully(fileSystem: LogFileSystem, fd: number, buffer: Buffer, length: number, position: number, done: (error: unknown) => void): void {
  let written = 0;
  const step = (error: NodeJS.ErrnoException | null, bytesWritten: number): void => {
    if (error !== null) return done(error);
    if (bytesWritten <= 0) return done(new Error(`write made no progress at byte ${position + written}`));
    written += bytesWritten;
    if (written === length) return done(null);
    fileSystem.write(fd, buffer, written, length - written, position + written, step);
  };
  fileSystem.write(fd, buffer, 0, length, position, step);
}
