/**
 * What the HTTP API and the metrics can learn about the log without knowing
 * which log it is: every RecordLog has nextLsn; the SegmentedLog also has
 * firstLsn, durableLsn, its segments and the history check's status. A MemoryLog (tests) has none of the
 * extras, so each is optional and read only when present.
 */
import type { HistoryStatus } from '../log/history.js';
import type { SegmentInfo } from '../log/segment.js';

interface IntrospectableLog {
  readonly nextLsn: number;
  readonly firstLsn?: number;
  readonly durableLsn?: number;
  readonly history?: HistoryStatus;
  segments?(): SegmentInfo[];
}

export interface LogPosition {
  readonly nextLsn: number;
  /** The oldest LSN still in the log; 1 when the log cannot say (nothing is ever removed from a MemoryLog). */
  readonly firstLsn: number;
  /** Everything up to here is fsynced; nextLsn - 1 when the log cannot say. */
  readonly durableLsn: number;
  /** Total bytes of the segment files; undefined when the log has no segments. */
  readonly bytes: number | undefined;
  readonly segments: readonly SegmentInfo[] | undefined;
  /** The background check of the records before the newest snapshot (damage, unrestorable LSNs); null when the log has none. */
  readonly history: HistoryStatus | null;
}

export function logPositionOf(log: unknown): LogPosition {
  const introspectable = log as IntrospectableLog;
  const segments = typeof introspectable.segments === 'function' ? introspectable.segments() : undefined;
  const nextLsn = introspectable.nextLsn;
  return {
    nextLsn,
    firstLsn: typeof introspectable.firstLsn === 'number' ? introspectable.firstLsn : 1,
    durableLsn: typeof introspectable.durableLsn === 'number' ? introspectable.durableLsn : nextLsn - 1,
    bytes: segments?.reduce((sum, segment) => sum + segment.bytes, 0),
    segments,
    history: introspectable.history ?? null,
  };
}
