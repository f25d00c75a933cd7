/**
 * The real file system without its syncs, for property tests of what the log
 * files hold (recovery, retention) that crash nothing: their syncs prove
 * nothing, and on CI's shared disk thousands of them made one property outlast
 * 240 s. Writes, renames and the zero fill stay real. Durability is tested by
 * the crash and power-loss tests, never with this.
 */
import { nodeFileSystem, type LogFileSystem } from '../../src/log/file-system.js';

export const unsyncedFileSystem: LogFileSystem = { ...nodeFileSystem, fdatasync: (_fd, callback) => callback(null), fsyncAsync: async () => {} };

/** SegmentedLog.open options: the unsynced file system, with the zero fill a real log has. */
export const withoutSyncs = { fileSystem: unsyncedFileSystem, preallocate: true } as const;
