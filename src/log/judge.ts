/**
 * What the broker would make of a data directory, offline and read-only: the
 * start-up judgement (recovery.ts planRecovery, the same call the broker
 * makes) and then the history check the broker runs in the background
 * (history.ts). `cairn inspect verify` prints this, so it can never disagree
 * with the broker.
 */
import { silentLogger } from '../logger.js';
import { LogError } from './errors.js';
import { nodeFileSystem, type LogFileSystem } from './file-system.js';
import { HistoryCheck, type HistoryStatus } from './history.js';
import type { Lsn } from './record.js';
import { planRecovery, type TornTail } from './recovery.js';
import { listDataDirectory } from './segment.js';
import { firstValidSnapshotAtOrAfter, loadNewestValidSnapshot } from './snapshot.js';

export type StartupJudgement =
  | { readonly starts: true; readonly replayFromLsn: Lsn; readonly tornTail: TornTail | undefined }
  | { readonly starts: false; readonly refusal: LogError };

export interface DataDirectoryJudgement {
  readonly startup: StartupJudgement;
  /** The history check's result; undefined when start-up refuses (it never gets that far). */
  readonly history: HistoryStatus | undefined;
}

export async function judgeDataDirectory(dir: string, options: { acceptLostRecordsAfter?: Lsn; fileSystem?: LogFileSystem } = {}): Promise<DataDirectoryJudgement> {
  const fileSystem = options.fileSystem ?? nodeFileSystem;
  const listing = listDataDirectory(fileSystem, dir);
  if (listing.segments.length === 0) return { startup: { starts: true, replayFromLsn: 1, tornTail: undefined }, history: undefined };
  const snapshot = loadNewestValidSnapshot(fileSystem, dir, listing.snapshots, silentLogger());
  let plan: ReturnType<typeof planRecovery>;
  try {
    plan = planRecovery(fileSystem, dir, listing.segments, snapshot?.lsn, options);
  } catch (error) {
    if (error instanceof LogError) return { startup: { starts: false, refusal: error }, history: undefined };
    throw error;
  }
  const history = await new HistoryCheck(fileSystem, dir, plan.history, (lsn) => firstValidSnapshotAtOrAfter(fileSystem, dir, listing.snapshots, lsn), Infinity).start();
  return { startup: { starts: true, replayFromLsn: (snapshot?.lsn ?? 0) + 1, tornTail: plan.tornTail }, history };
}
