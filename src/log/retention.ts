/**
 * Retention: which old segments may go, and making them go durably.
 *
 * A segment may be removed only when BOTH hold:
 *   1. it is wholly covered by the newest snapshot (lastLsn <= snapshot LSN),
 *      so start-up never needs it, and
 *   2. it is outside the point-in-time window. The window is the union of the
 *      configured limits: the newest `retentionBytes` bytes of segments, and
 *      every segment holding a record younger than `retentionMs`. With neither
 *      configured, the window is the whole log and nothing is removed.
 * The last (active) segment is never removed, and only a prefix of the log
 * goes: a hole in the LSN chain would read as corruption.
 *
 * Point-in-time recovery to an LSN X needs a snapshot at or before X and the
 * records after it. So the window is anchored on the newest snapshot A that
 * lies before the window's first record W: only segments wholly at or before A
 * go, and A stays (older snapshots become obsolete). Every LSN from A on stays
 * restorable; without such a snapshot nothing goes, since only a replay from
 * LSN 1 could reach the window's start.
 */
import { join } from 'node:path';
import { isErrnoCode, LogError } from './errors.js';
import { fsyncDirectory, type LogFileSystem } from './file-system.js';
import type { Lsn } from './record.js';

export interface RetentionPolicy {
  readonly retentionBytes: number | undefined;
  readonly retentionMs: number | undefined;
}

export interface RetentionCandidate {
  readonly bytes: number;
  readonly firstLsn: Lsn;
  readonly lastLsn: Lsn;
  /** Largest record timestamp; undefined for a segment without records. */
  readonly maxTimestamp: number | undefined;
}

/** How many segments, counted from the oldest, may be removed, given the LSNs of the valid snapshots. Pure. */
export function countRemovableSegments(segments: readonly RetentionCandidate[], snapshotLsns: readonly Lsn[], policy: RetentionPolicy, now: number): number {
  const windowed = countOutsideWindow(segments, Math.max(0, ...snapshotLsns), policy, now);
  if (windowed === 0) return 0;
  const windowStart = segments[windowed]!.firstLsn;
  const anchor = Math.max(0, ...snapshotLsns.filter((lsn) => lsn <= windowStart - 1));
  let removable = 0;
  while (removable < windowed && segments[removable]!.lastLsn <= anchor) removable++;
  return removable;
}

/** Segments wholly covered by the newest snapshot and outside the window. */
function countOutsideWindow(segments: readonly RetentionCandidate[], snapshotLsn: Lsn, policy: RetentionPolicy, now: number): number {
  if (snapshotLsn === 0) return 0;
  if (policy.retentionBytes === undefined && policy.retentionMs === undefined) return 0;
  const newerBytes = new Array<number>(segments.length).fill(0);
  for (let i = segments.length - 2; i >= 0; i--) newerBytes[i] = newerBytes[i + 1]! + segments[i + 1]!.bytes;
  let removable = 0;
  for (let i = 0; i < segments.length - 1; i++) {
    const segment = segments[i]!;
    if (segment.lastLsn > snapshotLsn) break;
    const insideBytesWindow = policy.retentionBytes !== undefined && newerBytes[i]! < policy.retentionBytes;
    const insideTimeWindow = policy.retentionMs !== undefined && segment.maxTimestamp !== undefined && segment.maxTimestamp >= now - policy.retentionMs;
    if (insideBytesWindow || insideTimeWindow) break;
    removable = i + 1;
  }
  return removable;
}

/**
 * Deletes `files` from `dir`, or moves them to `archiveDir` when given, one at
 * a time in the order given (oldest first), fsyncing the directories after
 * each: unsynced removals may reach the disk in any order, and a crash that
 * kept an older segment but not a newer one would leave a hole in the LSN
 * chain. With one fsync per file, a crash leaves a prefix removed.
 * An archive never overwrites a file of the same name: it may belong to another log.
 */
export async function removeOrArchive(fileSystem: LogFileSystem, dir: string, archiveDir: string | undefined, files: readonly string[]): Promise<{ removed: string[]; archived: string[] }> {
  const removed: string[] = [];
  const archived: string[] = [];
  for (const file of files) {
    if (archiveDir === undefined) {
      await fileSystem.unlinkAsync(join(dir, file));
      removed.push(file);
    } else {
      await moveToArchive(fileSystem, dir, archiveDir, file);
      await fsyncDirectory(fileSystem, archiveDir);
      archived.push(file);
    }
    await fsyncDirectory(fileSystem, dir);
  }
  return { removed, archived };
}

async function moveToArchive(fileSystem: LogFileSystem, dir: string, archiveDir: string, file: string): Promise<void> {
  const target = join(archiveDir, file);
  if (fileSystem.existsSync(target)) throw new LogError('EARCHIVEEXISTS', `cannot archive ${file}: ${target} already exists`);
  try {
    await fileSystem.renameAsync(join(dir, file), target);
  } catch (error) {
    if (!isErrnoCode(error, 'EXDEV')) throw error;
    // Another file system: copy, make the copy durable, only then delete the original.
    await fileSystem.copyFileExclusiveAsync(join(dir, file), target);
    const fd = await fileSystem.openAsync(target, 'r');
    try {
      await fileSystem.fsyncAsync(fd);
    } finally {
      await fileSystem.closeAsync(fd);
    }
    await fsyncDirectory(fileSystem, archiveDir);
    await fileSystem.unlinkAsync(join(dir, file));
  }
}
