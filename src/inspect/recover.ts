/**
 * `cairn recover --from DIR --to NEWDIR (--lsn N | --time T)`: a new data
 * directory whose start-up state is the state right after record N (or after
 * the last record at or before time T). The source is only read.
 *
 * How: the records are re-appended through SegmentedLog into NEWDIR, keeping
 * each record's LSN, timestamp, kind and body (the log assigns LSNs
 * consecutively, and we check it assigned the same ones). When the source
 * still starts at LSN 1 the copy starts there. When retention removed the
 * beginning, the newest valid snapshot S <= N is the base: the records from
 * the oldest message still queued in S (queues hold references into the log,
 * and retention keeps those segments) — or from S+1 when nothing is queued —
 * up to N are copied, then S is written into NEWDIR. Start-up loads S,
 * replays the rest, and reads queued messages from the copied segments.
 *
 * The source may be a JetStream log (`--from nats://host/stream`). A
 * writer's takeover fence takes an LSN without a record: fences before the
 * first copied record are skipped (the new log starts after them), one among
 * the copied records is refused, naming it.
 *
 * The target is a data directory, or a new JetStream log (`--to
 * nats://host/newstream`, recover-into-stream.ts): the same records with the
 * same LSNs and the same snapshot, in a stream and its bucket.
 */
import * as fs from 'node:fs';
import { join, resolve } from 'node:path';
import { fsyncDirectory, nodeFileSystem } from '../log/file-system.js';
import { checkNotLocked, isLockFileName, lockDataDirectory } from '../log/directory-lock.js';
import { LogError, SegmentedLog, type AppendRecord } from '../log/index.js';
import { createSegment } from '../log/segment.js';
import { snapshotFileName, writeSnapshotFile } from '../log/snapshot.js';
import { countFlag, lsnFlag, parseLsn, parsePositiveInteger, parseTime, requiredString, timeFlag, UsageError, type CommandSpec, type ParsedFlags } from './args.js';
import { decode, encode } from '@msgpack/msgpack';
import { oldestLiveMessage } from '../projections/pins.js';
import { decodeState, encodeState, type EncodedState } from '../projections/snapshot-codec.js';
import { initialState } from '../projections/state.js';
import { isoTime } from './format.js';
import { writeLines } from './output.js';
import { replayBase, resolvePoint } from './project.js';
import { Progress, type InspectIo } from './progress.js';
import { recoverIntoStream } from './recover-into-stream.js';
import { describeRange, isJetStreamLocation, openSource, type LogSource } from './source.js';

const appendBatchRecords = 4096;

export const recoverCommand: CommandSpec = {
  name: 'recover',
  summary: 'Writes a new data directory whose state is the state right after record N (--lsn) or after the last record\nat or before a time (--time). The source directory is only read.',
  flags: [
    { name: 'from', kind: 'value', valueName: 'DIR', required: true, help: 'the data directory to recover from, or a JetStream log nats://host:4222/stream (credentials: CAIRN_NATS_CREDS); only read' },
    { name: 'to', kind: 'value', valueName: 'NEWDIR', required: true, help: 'a new or empty directory to write, or a new JetStream log nats://host:4222/newstream (credentials: CAIRN_NATS_CREDS)' },
    lsnFlag('lsn', 'recover to right after this LSN'),
    timeFlag('time', 'recover to the last record at or before this time'),
    countFlag('nats-replicas', 'with --to nats://…: replicas of the new stream, its snapshot bucket and lease (1..5)', '3'),
  ],
  examples: ['cairn recover --from ./data --to ./data-at-10h15 --time 2026-11-29T10:15:00Z'],
};

export async function runRecoverCommand(flags: ParsedFlags, io: InspectIo): Promise<number> {
  const fromDir = requiredString('recover', flags, 'from');
  const toDir = requiredString('recover', flags, 'to');
  const lsnValue = flags.strings.get('lsn');
  const timeValue = flags.strings.get('time');
  if ((lsnValue === undefined) === (timeValue === undefined)) throw new UsageError('give exactly one of --lsn N or --time T');
  if (resolve(fromDir) === resolve(toDir)) throw new UsageError('--to must be a new directory, not the source');
  const source = await openSource(fromDir);
  const target = resolvePoint(source, lsnValue !== undefined ? { lsn: parseLsn('lsn', lsnValue) } : { time: parseTime('time', timeValue!, Date.now()) });
  const base = replayBase(source, target);
  if (base === undefined) throw new UsageError(`cannot recover to LSN ${target}: no valid snapshot at or before it and ${describeRange(source)}`);
  const toStream = isJetStreamLocation(toDir);
  if (!toStream) checkTargetDirectory(toDir);

  const plan = planCopy(source.reader, base, target, io);
  let copied: CopiedRecords;
  try {
    copied = toStream
      ? await recoverIntoStream(toDir, parsePositiveInteger('nats-replicas', flags.strings.get('nats-replicas') ?? '3'), plan)
      : await recoverIntoDirectory(toDir, plan);
  } catch (error) {
    if (error instanceof LogError) throw new LogError(error.code, `cannot recover to LSN ${target} (it needs LSN ${plan.copyFrom}..${target}): ${error.message}`, { cause: error });
    throw error;
  }
  const from = base.snapshotLsn > 0 ? `snapshot at LSN ${base.snapshotLsn} + records ${plan.copyFrom}..${target}` : `records 1..${target}`;
  await writeLines(io.stdout, [`recovered ${toDir}: state right after LSN ${target}${copied.lastTimestamp === undefined ? '' : ` (${isoTime(copied.lastTimestamp)})`} from ${from} (${copied.records} record(s) copied); ${fromDir} was not modified`]);
  return 0;
}

export interface CopiedRecords {
  readonly records: number;
  readonly lastTimestamp: number | undefined;
}

/** The log a recovery writes into: it must give each copied record the LSN it had. */
export interface RecoveredLog {
  readonly nextLsn: number;
  append(records: readonly AppendRecord[]): Promise<number[]>;
}

/** What a recovery writes, whatever the target. */
export interface RecoverPlan {
  /** The first LSN copied: the new log starts there. */
  readonly copyFrom: number;
  /** An empty state at copyFrom - 1 (leading fences skipped, no snapshot): the true state there, for inspect's projections. */
  readonly emptyState: { readonly lsn: number; readonly data: Uint8Array } | undefined;
  /** The source's snapshot the state starts from, written once the records are copied. */
  readonly snapshot: { readonly lsn: number; readonly data: Uint8Array } | undefined;
  /** Copies the records copyFrom..target into `log`. */
  copy(log: RecoveredLog): Promise<CopiedRecords>;
}

function planCopy(reader: LogSource['reader'], base: { snapshotLsn: number; data: Uint8Array | undefined }, target: number, io: InspectIo): RecoverPlan {
  let copyFrom = base.snapshotLsn + 1;
  let emptyState: RecoverPlan['emptyState'];
  if (base.data !== undefined) {
    const pinned = oldestLiveMessage(decodeState(decode(base.data) as EncodedState))?.lsn;
    if (pinned !== undefined && pinned < copyFrom) copyFrom = pinned;
  } else {
    // A JetStream log starts with its first writer's fence (an LSN without a record): the new log starts
    // after the leading fences, on the empty state they leave (kept: it is the true state there).
    const first = firstRecordLsn(reader, copyFrom, target);
    if (first > copyFrom) {
      copyFrom = first;
      emptyState = { lsn: copyFrom - 1, data: emptyStateData(copyFrom - 1) };
    }
  }
  const snapshot = base.data === undefined ? undefined : { lsn: base.snapshotLsn, data: base.data };
  return { copyFrom, emptyState, snapshot, copy: (log) => copyRecords(reader, log, copyFrom - 1, target, io) };
}

async function recoverIntoDirectory(toDir: string, plan: RecoverPlan): Promise<CopiedRecords> {
  const { copyFrom, snapshot } = plan;
  // The first directory mkdir made (toDir or a parent of it); undefined when toDir was there, empty.
  const created = await fs.promises.mkdir(toDir, { recursive: true });
  // Held while NEWDIR is written: a broker started on it meanwhile would append to a half-made log.
  const lock = lockDataDirectory(toDir, 'cairn recover');
  try {
    if (snapshot !== undefined || plan.emptyState !== undefined) fs.closeSync(await createSegment(nodeFileSystem, toDir, copyFrom));
    // The log opens only on a snapshot at or after its start: while the pinned records are copied, a
    // placeholder (an empty state at copyFrom - 1) stands in for S, which would lie beyond the log's end.
    const placeholder = snapshot !== undefined && copyFrom <= snapshot.lsn;
    if (placeholder) await writeSnapshotFile(nodeFileSystem, toDir, copyFrom - 1, emptyStateData(copyFrom - 1));
    if (plan.emptyState !== undefined) await writeSnapshotFile(nodeFileSystem, toDir, plan.emptyState.lsn, plan.emptyState.data);
    const log = await SegmentedLog.open({ dir: toDir });
    let copied: CopiedRecords;
    try {
      copied = await plan.copy(log);
    } finally {
      await log.close();
    }
    if (snapshot !== undefined) {
      await writeSnapshotFile(nodeFileSystem, toDir, snapshot.lsn, snapshot.data);
      if (placeholder) {
        fs.unlinkSync(join(toDir, snapshotFileName(copyFrom - 1)));
        await fsyncDirectory(nodeFileSystem, toDir);
      }
    }
    return copied;
  } catch (error) {
    // A half-made directory must not pass for a recovered one: remove what this run made (the lock first).
    lock.release();
    removeWhatWasMade(toDir, created);
    const removed = created !== undefined ? `${created} was removed` : `what was written into ${toDir} was removed`;
    if (error instanceof LogError) throw new LogError(error.code, `${error.message}; ${removed}`, { cause: error });
    throw error;
  } finally {
    lock.release();
  }
}

function emptyStateData(lsn: number): Uint8Array {
  return encode(encodeState({ ...initialState(), lastLsn: lsn }));
}

/** The LSN of the first record at or after `from`, or past `target` when none is up to it. */
function firstRecordLsn(reader: LogSource['reader'], from: number, target: number): number {
  for (const record of reader.read({ lsn: from })) return Math.min(record.lsn, target + 1);
  return target + 1;
}

/** `dir` was missing or empty before this run (checkTargetDirectory); `created` is the first directory this run made. */
function removeWhatWasMade(dir: string, created: string | undefined): void {
  if (created !== undefined) {
    fs.rmSync(created, { recursive: true, force: true });
    return;
  }
  if (!fs.existsSync(dir)) return;
  for (const entry of fs.readdirSync(dir)) fs.rmSync(join(dir, entry), { recursive: true, force: true });
}

function checkTargetDirectory(dir: string): void {
  if (!fs.existsSync(dir)) return;
  if (!fs.statSync(dir).isDirectory()) throw new UsageError(`--to ${dir} exists and is not a directory`);
  checkNotLocked(dir);
  // A lock file alone is no content: lockDataDirectory refuses it if its holder runs, takes it over if not.
  if (fs.readdirSync(dir).some((name) => !isLockFileName(name))) throw new UsageError(`--to ${dir} exists and is not empty: give a new or empty directory`);
}

async function copyRecords(reader: LogSource['reader'], log: RecoveredLog, afterLsn: number, target: number, io: InspectIo): Promise<CopiedRecords> {
  const progress = new Progress(io, 'recover', target - afterLsn);
  let records = 0;
  let lastTimestamp: number | undefined;
  try {
    if (log.nextLsn !== afterLsn + 1) throw new Error(`the new log starts at LSN ${log.nextLsn}, expected ${afterLsn + 1}`);
    let batch: AppendRecord[] = [];
    let batchFirstLsn = afterLsn + 1;
    const flush = async (): Promise<void> => {
      if (batch.length === 0) return;
      const lsns = await log.append(batch);
      if (lsns[0] !== batchFirstLsn || lsns[lsns.length - 1] !== batchFirstLsn + batch.length - 1) throw new Error(`the new log assigned LSN ${String(lsns[0])}, expected ${batchFirstLsn}`);
      batchFirstLsn += batch.length;
      batch = [];
    };
    if (target > afterLsn) {
      for (const record of reader.read({ lsn: afterLsn + 1 })) {
        if (record.lsn > target) break;
        // A JetStream log's takeover fence takes an LSN without a record; a file log has no such gap.
        if (record.lsn !== batchFirstLsn + batch.length) throw new UsageError(`LSN ${batchFirstLsn + batch.length} holds no record (a JetStream writer's takeover fence), and a data directory cannot hold that gap: recover to a point before it, or to one whose snapshot and queued messages all come after it`);
        progress.tick();
        batch.push({ kind: record.kind, timestamp: record.timestamp, body: record.body });
        records++;
        lastTimestamp = record.timestamp;
        if (batch.length >= appendBatchRecords) await flush();
        // Stop at the target without reading on: the records after it may be damaged or missing.
        if (record.lsn >= target) break;
      }
      await flush();
    }
    if (log.nextLsn !== target + 1) throw new Error(`copied up to LSN ${log.nextLsn - 1}, expected ${target}`);
  } finally {
    progress.finish();
  }
  return { records, lastTimestamp };
}
