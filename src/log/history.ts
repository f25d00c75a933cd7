/**
 * The log's history: the sealed segments wholly before the first LSN replay
 * reads (newest valid snapshot + 1). Start-up does not need their records, so
 * it only reads their headers (recovery.ts); point-in-time recovery does need
 * them. This module checks their records in the background, after the broker
 * serves, and turns what it finds into the LSNs that can no longer be
 * restored — the same judgement `cairn inspect verify` prints.
 *
 * Point-in-time recovery to LSN X replays from a valid snapshot at or before
 * X (or from LSN 1) through X. So damage to LSNs a..b makes X unrestorable
 * exactly when a <= X and no valid snapshot lies in b..X: the unrestorable
 * range is a..S-1, where S is the first valid snapshot at or after b (the
 * newest snapshot is one, since the history ends before it).
 *
 * The check reads in slices of at most `sliceMs` and yields to the event loop
 * between them (setImmediate), so appends and deliveries go on meanwhile.
 */
import { join } from 'node:path';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { isErrnoCode } from './errors.js';
import type { LogFileSystem } from './file-system.js';
import type { Lsn } from './record.js';
import { SegmentVerifier } from './segment-verifier.js';

/** A sealed segment of the history, as start-up saw it. */
export interface HistorySegment {
  readonly file: string;
  readonly firstLsn: Lsn;
  /** The first LSN of the segment after it: this one must hold every LSN up to the one before. */
  readonly nextFirstLsn: Lsn;
  readonly bytes: number;
  /** A bad header, found at start-up: none of the segment's records can be trusted. */
  readonly headerProblem: string | undefined;
}

export interface LsnRange {
  readonly firstLsn: Lsn;
  readonly lastLsn: Lsn;
}

/** LSNs of one segment that cannot be read, and why. */
export interface HistoryDamage extends LsnRange {
  readonly segment: string;
  readonly reason: string;
}

export type HistoryState = 'pending' | 'checking' | 'intact' | 'damaged' | 'failed';

export interface HistoryStatus {
  readonly state: HistoryState;
  readonly segmentsToCheck: number;
  readonly segmentsChecked: number;
  readonly damage: readonly HistoryDamage[];
  /** LSNs point-in-time recovery can no longer reach, merged and sorted. */
  readonly unrestorable: readonly LsnRange[];
  /** One line for people; undefined while nothing is known to be wrong. */
  readonly summary: string | undefined;
}

/** A slice of checking blocks the event loop for about this long at most (plus one frame). */
export const historySliceMsDefault = 5;

/**
 * Checks the history once, in the background. `snapshotAtOrAfter(lsn)` gives
 * the first valid snapshot LSN at or after `lsn` (undefined if none).
 */
export class HistoryCheck {
  private current: HistoryStatus;
  private running: Promise<HistoryStatus> | undefined = undefined;
  private aborted = false;

  constructor(
    private readonly fileSystem: LogFileSystem,
    private readonly dir: string,
    private readonly segments: readonly HistorySegment[],
    private readonly snapshotAtOrAfter: (lsn: Lsn) => Lsn | undefined,
    private readonly sliceMs = historySliceMsDefault,
  ) {
    this.current = { state: 'pending', segmentsToCheck: segments.length, segmentsChecked: 0, damage: [], unrestorable: [], summary: undefined };
  }

  get status(): HistoryStatus {
    return this.current;
  }

  /** Starts the check (once); resolves with the final status, or the status so far when stopped. */
  start(): Promise<HistoryStatus> {
    this.running ??= this.run().catch((error: unknown) => {
      this.current = { ...this.current, state: 'failed', summary: `the history check failed: ${error instanceof Error ? error.message : String(error)}` };
      return this.current;
    });
    return this.running;
  }

  /** Stops a running check at its next slice. */
  async stop(): Promise<void> {
    this.aborted = true;
    await this.running;
  }

  private async run(): Promise<HistoryStatus> {
    const damage: HistoryDamage[] = [];
    this.update('checking', 0, damage);
    for (let i = 0; i < this.segments.length; i++) {
      const found = await this.checkSegment(this.segments[i]!);
      if (found === undefined) return this.current;
      damage.push(...found);
      this.update('checking', i + 1, damage);
    }
    this.update(damage.length > 0 ? 'damaged' : 'intact', this.segments.length, damage);
    return this.current;
  }

  private update(state: HistoryState, segmentsChecked: number, damage: readonly HistoryDamage[]): void {
    const unrestorable = unrestorableRanges(damage, this.snapshotAtOrAfter);
    this.current = { state, segmentsToCheck: this.segments.length, segmentsChecked, damage: [...damage], unrestorable, summary: describeHistoryDamage(damage, unrestorable) };
  }

  /** The damage in one segment; undefined when the check was stopped. */
  private async checkSegment(segment: HistorySegment): Promise<HistoryDamage[] | undefined> {
    if (segment.headerProblem !== undefined) return [{ segment: segment.file, firstLsn: segment.firstLsn, lastLsn: segment.nextFirstLsn - 1, reason: segment.headerProblem }];
    let fd: number;
    try {
      fd = this.fileSystem.openSync(join(this.dir, segment.file), 'r');
    } catch (error) {
      // Retention removed it since start-up: it is no longer history to restore.
      if (isErrnoCode(error, 'ENOENT')) return [];
      throw error;
    }
    try {
      const verifier = new SegmentVerifier(this.fileSystem, fd, segment.firstLsn, segment.bytes, false);
      while (!verifier.run(performance.now() + this.sliceMs)) {
        await yieldToEventLoop();
        if (this.aborted) return undefined;
      }
      return damageOf(segment, verifier);
    } finally {
      this.fileSystem.closeSync(fd);
    }
  }
}

/** What a verified segment's bad frames and end say about its LSNs. */
export function damageOf(segment: HistorySegment, verifier: Pick<SegmentVerifier, 'bad' | 'lastLsn'>): HistoryDamage[] {
  const lastExpected = segment.nextFirstLsn - 1;
  const damage: HistoryDamage[] = verifier.bad.map((bad) => ({
    segment: segment.file,
    firstLsn: bad.lsn,
    lastLsn: bad.resumesAt === undefined ? Math.max(bad.lsn, lastExpected) : bad.resumesAt.lsn - 1,
    reason: `byte offset ${bad.offset}: ${bad.reason}`,
  }));
  if (verifier.bad.at(-1)?.resumesAt === undefined && verifier.bad.length > 0) return damage;
  if (verifier.lastLsn < lastExpected) {
    const missing = { firstLsn: verifier.lastLsn + 1, lastLsn: lastExpected };
    damage.push({ segment: segment.file, ...missing, reason: `the segment ends at LSN ${verifier.lastLsn}; LSN ${missing.firstLsn}..${missing.lastLsn} are missing (a deleted or truncated segment file)` });
  } else if (verifier.lastLsn > lastExpected) {
    damage.push({ segment: segment.file, firstLsn: segment.nextFirstLsn, lastLsn: verifier.lastLsn, reason: `the segment runs to LSN ${verifier.lastLsn}, past the next segment's first LSN ${segment.nextFirstLsn}` });
  }
  return damage;
}

/** Merged, sorted LSN ranges that point-in-time recovery can no longer reach (see the top of this file). */
export function unrestorableRanges(damage: readonly LsnRange[], snapshotAtOrAfter: (lsn: Lsn) => Lsn | undefined): LsnRange[] {
  const ranges = damage
    .map((d) => ({ firstLsn: d.firstLsn, lastLsn: (snapshotAtOrAfter(d.lastLsn) ?? Infinity) - 1 }))
    .filter((r) => r.lastLsn >= r.firstLsn)
    .sort((a, b) => a.firstLsn - b.firstLsn);
  const merged: LsnRange[] = [];
  for (const range of ranges) {
    const previous = merged.at(-1);
    if (previous !== undefined && range.firstLsn <= previous.lastLsn + 1) merged[merged.length - 1] = { firstLsn: previous.firstLsn, lastLsn: Math.max(previous.lastLsn, range.lastLsn) };
    else merged.push(range);
  }
  return merged;
}

export function describeRanges(ranges: readonly LsnRange[]): string {
  return ranges.map((r) => (r.lastLsn === Infinity ? `${r.firstLsn} on` : r.firstLsn === r.lastLsn ? `${r.firstLsn}` : `${r.firstLsn}..${r.lastLsn}`)).join(', ');
}

/** The one-line account of history damage that the broker logs, serves in /api/overview, and verify prints. */
export function describeHistoryDamage(damage: readonly HistoryDamage[], unrestorable: readonly LsnRange[]): string | undefined {
  if (damage.length === 0) return undefined;
  const segments = new Set(damage.map((d) => d.segment)).size;
  const lost = `LSN ${describeRanges(damage)} cannot be read (${segments} segment(s) before the newest snapshot)`;
  if (unrestorable.length === 0) return `${lost}; a snapshot covers them, so every point stays restorable`;
  return `${lost}; point-in-time recovery is impossible for LSN ${describeRanges(unrestorable)}; replay does not need them, so the broker runs`;
}

/** A status as it stands once retention has removed the segments before `firstLsn`: what is gone is no longer damage. */
export function withoutRetired(status: HistoryStatus, firstLsn: Lsn): HistoryStatus {
  if (status.damage.every((d) => d.firstLsn >= firstLsn) && status.unrestorable.every((r) => r.firstLsn >= firstLsn)) return status;
  const clip = <T extends LsnRange>(ranges: readonly T[]): T[] => ranges.filter((r) => r.lastLsn >= firstLsn).map((r) => ({ ...r, firstLsn: Math.max(r.firstLsn, firstLsn) }));
  const damage = clip(status.damage);
  const unrestorable = clip(status.unrestorable);
  const state = status.state === 'damaged' && damage.length === 0 ? 'intact' : status.state;
  return { ...status, state, damage, unrestorable, summary: status.state === 'failed' ? status.summary : describeHistoryDamage(damage, unrestorable) };
}
