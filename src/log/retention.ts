/**
 * Retention: which old segments and snapshots may go, and making them go durably.
 *
 * A segment may be removed only when ALL hold:
 *   1. it is wholly covered by the newest snapshot (lastLsn <= snapshot LSN),
 *      so start-up never needs it;
 *   2. it is outside the point-in-time window. The window is the union of the
 *      configured limits: the newest `retentionBytes` bytes of segments, and
 *      every segment holding a record younger than `retentionMs`. With neither
 *      configured, the window is the whole log and nothing is removed;
 *   3. it holds no live message: every LSN in it is below the caller's pin
 *      `keepFromLsn` (the oldest record a message still queued needs — its
 *      payload is read back from the segment on delivery), whatever the
 *      settings.
 * The last (active) segment is never removed, and only a prefix of the log
 * goes: a hole in the LSN chain would read as corruption.
 *
 * Point-in-time recovery to an LSN X needs a valid snapshot at or before X
 * and the records after it. So the window is anchored on the newest valid
 * snapshot A that lies before the window's first record W: only segments
 * wholly at or before A go. Every LSN from A on stays restorable; without such
 * a snapshot nothing goes, since only a replay from LSN 1 could reach W.
 *
 * Snapshots kept (every other valid snapshot at or before the newest goes):
 *   - the newest valid one (start-up loads it);
 *   - the anchor A, when there is one;
 *   - with a window configured, the successor: the oldest valid snapshot after
 *     A (older than the newest). It is the next anchor: once the window has
 *     moved past it, the segments up to it can go. Keeping only the newest and
 *     A would stall retention for good as soon as the window is longer than
 *     the snapshot interval: no kept snapshot would ever fall before the
 *     window's first record again. The price of keeping one successor rather
 *     than every snapshot inside the window: the anchor advances in steps, so
 *     the log can hold up to about twice the window (plus a snapshot interval)
 *     before the next step, with at most three snapshots on disk.
 * Without a window no segment ever goes, so no successor is needed; replay
 * from LSN 1 (or from A, if earlier retention removed the start) reaches
 * every LSN.
 * Invalid snapshots (a failed check, logged at start-up) are never removed:
 * they are kept for forensics, never count as the newest, an anchor or a
 * successor, and the operator removes them after looking.
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

export interface SnapshotCandidate {
  readonly lsn: Lsn;
  /** Passed its checks (snapshot.ts). */
  readonly valid: boolean;
}

export interface RetentionPlan {
  /** How many segments, counted from the oldest, go. */
  readonly segments: number;
  /** The LSNs of the snapshots that go, ascending. */
  readonly snapshots: Lsn[];
}

/**
 * What retention removes, given the segments (oldest first), the snapshots at or before the newest valid one,
 * the policy, the time, and the pin (undefined: nothing is queued). Pure.
 */
export function planRetention(segments: readonly RetentionCandidate[], snapshots: readonly SnapshotCandidate[], policy: RetentionPolicy, now: number, keepFromLsn: Lsn | undefined): RetentionPlan {
  const valid = snapshots.filter((s) => s.valid).map((s) => s.lsn).sort((a, b) => a - b);
  return { segments: countRemovableSegments(segments, valid, policy, now, keepFromLsn), snapshots: retiredSnapshots(segments, valid, policy, now) };
}

/** How many segments, counted from the oldest, may be removed, given the LSNs of the valid snapshots. Pure. */
export function countRemovableSegments(segments: readonly RetentionCandidate[], snapshotLsns: readonly Lsn[], policy: RetentionPolicy, now: number, keepFromLsn: Lsn | undefined = undefined): number {
  const { windowed, anchor } = anchorOf(segments, snapshotLsns, policy, now);
  let removable = 0;
  while (removable < windowed && segments[removable]!.lastLsn <= anchor && (keepFromLsn === undefined || segments[removable]!.lastLsn < keepFromLsn)) removable++;
  return removable;
}

/** The valid snapshots (LSNs) that are neither the newest, the anchor, nor (with a window) the successor. Pure. */
export function retiredSnapshots(segments: readonly RetentionCandidate[], snapshotLsns: readonly Lsn[], policy: RetentionPolicy, now: number): Lsn[] {
  if (snapshotLsns.length === 0) return [];
  const newest = Math.max(...snapshotLsns);
  const { anchor } = anchorOf(segments, snapshotLsns, policy, now);
  const kept = new Set([newest, anchor]);
  const successor = snapshotLsns.filter((lsn) => lsn > anchor && lsn < newest).sort((a, b) => a - b)[0];
  if (windowConfigured(policy) && successor !== undefined) kept.add(successor);
  return snapshotLsns.filter((lsn) => !kept.has(lsn)).sort((a, b) => a - b);
}

/**
 * `windowed`: the leading segments wholly covered by the newest snapshot and outside the window. `anchor`: the
 * newest snapshot before the first record the window (or start-up) needs, 0 when there is none.
 */
function anchorOf(segments: readonly RetentionCandidate[], snapshotLsns: readonly Lsn[], policy: RetentionPolicy, now: number): { windowed: number; anchor: Lsn } {
  const windowed = countOutsideWindow(segments, Math.max(0, ...snapshotLsns), policy, now);
  const windowStart = segments[windowed]!.firstLsn;
  return { windowed, anchor: Math.max(0, ...snapshotLsns.filter((lsn) => lsn <= windowStart - 1)) };
}

function windowConfigured(policy: RetentionPolicy): boolean {
  return policy.retentionBytes !== undefined || policy.retentionMs !== undefined;
}

/** Segments wholly covered by the newest snapshot and outside the window. */
function countOutsideWindow(segments: readonly RetentionCandidate[], snapshotLsn: Lsn, policy: RetentionPolicy, now: number): number {
  if (snapshotLsn === 0 || !windowConfigured(policy)) return 0;
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
