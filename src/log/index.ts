/**
 * The log's public surface. Other layers import from here only.
 */
export type { Lsn, AppendRecord, LogRecord } from './record.js';
export { SegmentedLog, type LogOptions, type RetentionPin } from './log.js';
export type { SegmentInfo } from './segment.js';
export type { Snapshot, SnapshotFileInfo } from './snapshot.js';
export type { ReadFrom } from './read.js';
export { describeTornTail, type TornTail } from './recovery.js';
export { judgeDataDirectory, type DataDirectoryJudgement, type StartupJudgement } from './judge.js';
export { describeRanges, type HistoryDamage, type HistoryState, type HistoryStatus, type LsnRange } from './history.js';
export { openLogReader, type LogReader, type VerifyReport, type BadRecord } from './reader.js';
export {
  LogError,
  NotACairnLogError,
  SegmentHeaderError,
  CorruptRecordError,
  LogInconsistentError,
  LostRecordsError,
  LogFailedError,
  DiskFullError,
  LogClosedError,
  InvalidRecordError,
  NoSuchRecordError,
  RecordReadError,
} from './errors.js';
export { nodeFileSystem, type LogFileSystem } from './file-system.js';
export type { SyncLane, SyncLanes } from './sync-lane.js';
