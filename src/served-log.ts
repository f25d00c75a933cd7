/**
 * The log `cairn serve` runs on. By default the segmented file log in the
 * data directory (locked, so one process at a time). With
 * `--log nats://host:4222,…/stream` the JetStream log (src/log/jetstream/):
 * several Cairn nodes may point at the same stream, and the one holding the
 * stream's writer lease writes it; the others are standbys, waiting (before
 * any listener opens) until the lease's key expires, then reading the stream,
 * fencing the old writer off and serving. While it waits, a standby follows
 * the stream and keeps its projection up to date (standby-tail.ts), so the
 * takeover reads and replays only what the writer appended last. A writer that loses its lease fails
 * its log at once (EDEPOSED), which stops it like any failed log (fail-stop).
 */
import * as fs from 'node:fs';
import type { ServeConfig } from './config.js';
import { lockDataDirectory } from './log/directory-lock.js';
import { SegmentedLog, type LogFailedError, type LogFileSystem, type SyncLanes } from './log/index.js';
import type { JetStreamLog } from './log/jetstream/jetstream-log.js';
import type { BrokerState } from './projections/state.js';
import type { GroupedReplay } from './projections/transaction-groups.js';
import type { Logger } from './logger.js';
import type { Metrics } from './metrics.js';

export type ServedLog = SegmentedLog | JetStreamLog;

export interface OpenedLog {
  readonly log: ServedLog;
  /** What a warm standby built while it waited: the broker continues from there instead of replaying from the snapshot. */
  readonly warm?: { readonly state: BrokerState; readonly replay: GroupedReplay; readonly nextLsn: number; readonly snapshotLsn: number };
  /** Closes the log and gives back what it held (the data directory lock, or the writer lease and the connection). */
  close(): Promise<void>;
}

export interface ServedLogOptions {
  readonly config: ServeConfig;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly onFailed: (error: LogFailedError) => void;
  /** Tests only (fault injection into the file log). */
  readonly logFileSystem?: LogFileSystem | undefined;
  /** Tests only: where the file log's lone batches sync (a forced lane). */
  readonly syncLanes?: SyncLanes | undefined;
}

/** Locks the data directory before the log is opened: a second broker on it must not even run recovery. Released by close(). */
export async function openFileLog({ config, logger, metrics, onFailed, logFileSystem, syncLanes }: ServedLogOptions): Promise<OpenedLog> {
  await fs.promises.mkdir(config.dataDir, { recursive: true });
  const lock = lockDataDirectory(config.dataDir, 'cairn serve', logger);
  try {
    const log = await SegmentedLog.open({
      dir: config.dataDir,
      onSync: (seconds, records) => metrics.fsync(seconds, records),
      onFailed,
      segmentBytesMax: config.segmentBytesMax,
      logger: logger.child({ component: 'log' }),
      ...(config.archiveDir !== undefined ? { archiveDir: config.archiveDir } : {}),
      ...(config.retentionBytes !== undefined ? { retentionBytes: config.retentionBytes } : {}),
      ...(config.retentionMs !== undefined ? { retentionMs: config.retentionMs } : {}),
      ...(logFileSystem !== undefined ? { fileSystem: logFileSystem } : {}),
      ...(syncLanes !== undefined ? { syncLanes } : {}),
      acceptLostRecordsAfter: config.acceptLostRecordsAfter,
    });
    return {
      log,
      close: async () => {
        try {
          await log.close();
        } finally {
          lock.release();
        }
      },
    };
  } catch (error) {
    lock.release();
    throw error;
  }
}

/**
 * Waits (as a standby) for the stream's writer lease, then opens the JetStream log with a fence
 * (served-jetstream-log.ts). Loaded only then: the NATS client's modules cost a broker on the file log
 * ~0.1 s of CPU at every start.
 */
export async function openJetStreamServedLog(options: ServedLogOptions): Promise<OpenedLog> {
  return (await import('./served-jetstream-log.js')).openJetStreamServedLog(options);
}
