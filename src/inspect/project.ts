/**
 * The broker state at any point of the log: start from the newest valid
 * snapshot at or before the target LSN whose following records are still
 * retained (else from the empty state, when the log still starts at LSN 1),
 * then apply the records up to the target — the same fold start-up runs.
 */
import { decode } from '@msgpack/msgpack';
import { readSnapshotFile } from '../log/snapshot.js';
import { GroupedReplay } from '../projections/transaction-groups.js';
import { decodeState, type EncodedState } from '../projections/snapshot-codec.js';
import { initialState, type BrokerState } from '../projections/state.js';
import { UsageError, type PointInLog } from './args.js';
import { Progress, type InspectIo } from './progress.js';
import { describeRange, lsnAtTime, type LogSource } from './source.js';

export interface ProjectedState {
  readonly state: BrokerState;
  readonly lsn: number;
  /** 0 when replay started from the empty state. */
  readonly snapshotLsn: number;
  readonly recordsReplayed: number;
}

export interface ReplayBase {
  readonly snapshotLsn: number;
  readonly data: Uint8Array | undefined;
}

/** The snapshot (or the empty state) replay to `lsn` starts from; undefined if history before `lsn` is gone. */
export function replayBase(source: LogSource, lsn: number): ReplayBase | undefined {
  const candidates = source.reader.snapshots().filter((s) => s.valid && s.lsn <= lsn && s.lsn + 1 >= source.firstLsn).sort((a, b) => b.lsn - a.lsn);
  for (const candidate of candidates) {
    const loaded = readSnapshotFile(source.reader.fileSystem, source.reader.dir, candidate.file, candidate.lsn);
    if (!('invalid' in loaded)) return { snapshotLsn: loaded.lsn, data: loaded.data };
  }
  return source.firstLsn === 1 ? { snapshotLsn: 0, data: undefined } : undefined;
}

/** Resolves --at / --lsn / --time to an LSN inside the retained history, or throws a UsageError naming the range. */
export function resolvePoint(source: LogSource, point: PointInLog | undefined): number {
  if (point === undefined) return source.lastLsn;
  if ('time' in point) {
    const lsn = lsnAtTime(source, point.time);
    if (lsn === undefined) throw new UsageError(`no record at or before ${new Date(point.time).toISOString()}: ${describeRange(source)}`);
    return lsn;
  }
  if (point.lsn > source.lastLsn) throw new UsageError(`LSN ${point.lsn} is out of range: ${describeRange(source)}`);
  if (point.lsn < source.firstLsn - 1 || (point.lsn === 0 && source.firstLsn > 1)) throw new UsageError(`LSN ${point.lsn} is before the retained history: ${describeRange(source)}`);
  return point.lsn;
}

export function projectState(source: LogSource, lsn: number, io: InspectIo): ProjectedState {
  const base = replayBase(source, lsn);
  if (base === undefined) throw new UsageError(`cannot rebuild the state at LSN ${lsn}: no valid snapshot at or before it and ${describeRange(source)}`);
  const state = base.data === undefined ? initialState() : decodeState(decode(base.data) as EncodedState);
  let recordsReplayed = 0;
  if (lsn > base.snapshotLsn) {
    const progress = new Progress(io, 'replay', lsn - base.snapshotLsn);
    // A transaction not committed by the target LSN is not in the state, as after a crash there.
    const replay = new GroupedReplay(state);
    try {
      for (const record of source.reader.read({ lsn: base.snapshotLsn + 1 })) {
        progress.tick();
        replay.feed(record);
        recordsReplayed++;
        // Stop at the target without reading on: the records after it may be damaged or missing.
        if (record.lsn >= lsn) break;
      }
    } finally {
      progress.finish();
    }
  }
  return { state, lsn, snapshotLsn: base.snapshotLsn, recordsReplayed };
}
