/**
 * Every file-system call the log makes (appends, rolls, recovery, reads,
 * snapshots, retention), behind one interface, so that a test can run the log
 * on a simulated disk: inject failures (EIO from fdatasync, ENOSPC from write)
 * or cut the power and keep only what was made durable
 * (test/support/simulated-storage.ts). Nothing in src/log imports node:fs
 * for log data except this file; `nodeFileSystem` is the default everywhere.
 *
 * Three styles, each where the code needs it:
 * - the append hot path (`write`, `fdatasync`) takes callbacks: the cheapest
 *   way into libuv's thread pool, and a group commit makes two such calls;
 * - the cold asynchronous paths (creating a segment, a roll, snapshots,
 *   retention) use promises, named `…Async`;
 * - start-up recovery and reads are synchronous (`…Sync`), as before.
 * The durability rules the log relies on are POSIX's: file data is durable
 * after fdatasync/fsync of that file; a created, renamed or removed directory
 * entry after an fsync of the directory (opened with `openSync(dir, 'r')` or
 * `openAsync(dir, 'r')`).
 */
import * as fs from 'node:fs';
import { dirname, resolve } from 'node:path';
import { promisify } from 'node:util';

export type WriteCallback = (error: NodeJS.ErrnoException | null, bytesWritten: number) => void;
export type SyncCallback = (error: NodeJS.ErrnoException | null) => void;

/** 'r' also opens a directory (for fsync); 'wx+' fails with EEXIST when the file exists. */
export type OpenFlags = 'r' | 'r+' | 'w' | 'w+' | 'wx+';

export interface FileSize {
  readonly size: number;
}

export interface LogFileSystem {
  // The append hot path.
  write(fd: number, buffer: Buffer, offset: number, length: number, position: number, callback: WriteCallback): void;
  fdatasync(fd: number, callback: SyncCallback): void;

  // Cold asynchronous paths.
  openAsync(path: string, flags: OpenFlags): Promise<number>;
  closeAsync(fd: number): Promise<void>;
  /** Positional; resolves with the bytes written (a short write is possible, as with pwritev). */
  writevAsync(fd: number, buffers: readonly Uint8Array[], position: number): Promise<number>;
  fsyncAsync(fd: number): Promise<void>;
  fstatAsync(fd: number): Promise<FileSize>;
  ftruncateAsync(fd: number, bytes: number): Promise<void>;
  renameAsync(from: string, to: string): Promise<void>;
  unlinkAsync(path: string): Promise<void>;
  /** Fails with EEXIST when `to` exists. */
  copyFileExclusiveAsync(from: string, to: string): Promise<void>;
  /** Creates `path` and any missing parent. */
  mkdirAsync(path: string): Promise<void>;

  // Start-up recovery and reads.
  openSync(path: string, flags: OpenFlags): number;
  closeSync(fd: number): void;
  readSync(fd: number, buffer: Buffer, offset: number, length: number, position: number): number;
  writeSync(fd: number, buffer: Buffer, offset: number, length: number, position: number): number;
  fstatSync(fd: number): FileSize;
  ftruncateSync(fd: number, bytes: number): void;
  fsyncSync(fd: number): void;
  /** Entry names, in no particular order. */
  readdirSync(path: string): string[];
  readFileSync(path: string): Buffer;
  statSync(path: string): FileSize;
  existsSync(path: string): boolean;
}

const fsyncPromise = promisify(fs.fsync);
const fstatPromise = promisify(fs.fstat);
const ftruncatePromise = promisify(fs.ftruncate);
const writevPromise = promisify(fs.writev);

export const nodeFileSystem: LogFileSystem = {
  write: (fd, buffer, offset, length, position, callback) => fs.write(fd, buffer, offset, length, position, callback),
  fdatasync: (fd, callback) => fs.fdatasync(fd, callback),

  openAsync: promisify(fs.open) as (path: string, flags: OpenFlags) => Promise<number>,
  closeAsync: promisify(fs.close),
  writevAsync: async (fd, buffers, position) => (await writevPromise(fd, buffers as Uint8Array[], position)).bytesWritten,
  fsyncAsync: (fd) => fsyncPromise(fd),
  fstatAsync: (fd) => fstatPromise(fd),
  ftruncateAsync: (fd, bytes) => ftruncatePromise(fd, bytes),
  renameAsync: promisify(fs.rename),
  unlinkAsync: promisify(fs.unlink),
  copyFileExclusiveAsync: (from, to) => fs.promises.copyFile(from, to, fs.constants.COPYFILE_EXCL),
  mkdirAsync: async (path) => void (await fs.promises.mkdir(path, { recursive: true })),

  openSync: (path, flags) => fs.openSync(path, flags),
  closeSync: (fd) => fs.closeSync(fd),
  readSync: (fd, buffer, offset, length, position) => fs.readSync(fd, buffer, offset, length, position),
  writeSync: (fd, buffer, offset, length, position) => fs.writeSync(fd, buffer, offset, length, position),
  fstatSync: (fd) => fs.fstatSync(fd),
  ftruncateSync: (fd, bytes) => fs.ftruncateSync(fd, bytes),
  fsyncSync: (fd) => fs.fsyncSync(fd),
  readdirSync: (path) => fs.readdirSync(path),
  readFileSync: (path) => fs.readFileSync(path),
  statSync: (path) => fs.statSync(path),
  existsSync: (path) => fs.existsSync(path),
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

/** writeFully for the synchronous path: the error (or null) instead of a callback. */
export function writeFullySync(fileSystem: LogFileSystem, fd: number, buffer: Buffer, length: number, position: number): unknown {
  try {
    let written = 0;
    while (written < length) {
      const bytesWritten = fileSystem.writeSync(fd, buffer, written, length - written, position + written);
      if (bytesWritten <= 0) return new Error(`write made no progress at byte ${position + written}`);
      written += bytesWritten;
    }
    return null;
  } catch (error: unknown) {
    return error;
  }
}

/** fdatasync on the calling thread (a file of nodeFileSystem's): the error, or null. */
export function fdatasyncOnCallingThread(fd: number): unknown {
  try {
    fs.fdatasyncSync(fd);
    return null;
  } catch (error: unknown) {
    return error;
  }
}

/** All of `buffers` at `position`, or an error naming the short write. */
export async function writeAllAsync(fileSystem: LogFileSystem, fd: number, buffers: readonly Uint8Array[], position: number, what: string): Promise<void> {
  const total = buffers.reduce((sum, buffer) => sum + buffer.length, 0);
  const bytesWritten = await fileSystem.writevAsync(fd, buffers, position);
  if (bytesWritten !== total) throw new Error(`short ${what} write: ${bytesWritten} of ${total} bytes`);
}

/** fsync a directory so that a created, renamed or deleted entry survives a crash. */
export async function fsyncDirectory(fileSystem: LogFileSystem, dir: string): Promise<void> {
  const fd = await fileSystem.openAsync(dir, 'r');
  try {
    await fileSystem.fsyncAsync(fd);
  } finally {
    await fileSystem.closeAsync(fd);
  }
}

/**
 * Creates `dir` and any missing parent, and makes them survive a power loss: a
 * new directory's entry lives in its parent, so each parent of a created
 * directory is fsynced (top down). Without it the whole data directory, with
 * every acknowledged record in it, could be gone after a crash. A parent we
 * may not read (EACCES) cannot be fsynced by us; the file system's own commit
 * has to do.
 */
export async function makeDirectoryDurably(fileSystem: LogFileSystem, dir: string): Promise<void> {
  const created: string[] = [];
  for (let path = resolve(dir); !fileSystem.existsSync(path) && dirname(path) !== path; path = dirname(path)) created.unshift(path);
  await fileSystem.mkdirAsync(dir);
  for (const path of created) {
    try {
      await fsyncDirectory(fileSystem, dirname(path));
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'EACCES') throw error;
    }
  }
}

export function fsyncDirectorySync(fileSystem: LogFileSystem, dir: string): void {
  const fd = fileSystem.openSync(dir, 'r');
  try {
    fileSystem.fsyncSync(fd);
  } finally {
    fileSystem.closeSync(fd);
  }
}
