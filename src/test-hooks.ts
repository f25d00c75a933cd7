/**
 * Fault injection for tests that run `cairn serve` as a child process
 * (test/crash). Read from the environment by the CLI only: no flag, not in
 * --help, and nothing changes unless a CAIRN_TEST_HOOK_* variable is set.
 *
 *   CAIRN_TEST_HOOK_FAIL_FDATASYNC_AFTER=N   the log's fdatasyncs after the
 *                                            first N fail with EIO
 *   CAIRN_TEST_HOOK_SLOW_FDATASYNC_MS=N      every fdatasync of the log takes
 *                                            N ms more (a slow disk: records
 *                                            wait longer behind a sync in
 *                                            flight, so a kill -9 finds more
 *                                            of them unwritten)
 *   CAIRN_TEST_HOOK_SYNC_LANE=loop|pool      every lone batch's fdatasync runs
 *                                            on that lane (log/sync-lane.ts),
 *                                            whatever the load: a loaded CI
 *                                            machine would otherwise never
 *                                            sync on the loop. The first sync
 *                                            on it is logged (info), so a test
 *                                            can see the lane was taken.
 */
import { nodeFileSystem, type LogFileSystem } from './log/file-system.js';
import type { SyncLane, SyncLanes } from './log/index.js';
import type { Logger } from './logger.js';
import type { StartInternals } from './server.js';

export const failFdatasyncAfterVariable = 'CAIRN_TEST_HOOK_FAIL_FDATASYNC_AFTER';
export const slowFdatasyncVariable = 'CAIRN_TEST_HOOK_SLOW_FDATASYNC_MS';
export const syncLaneVariable = 'CAIRN_TEST_HOOK_SYNC_LANE';
/** What the log says at the first lone batch synced on the forced lane. */
export const forcedSyncLaneMessage = 'test hook: a lone batch synced on the forced lane';

/** The hooks the environment asks for, and a description for the start-up warning (undefined: none). */
export function testHooksFrom(env: NodeJS.ProcessEnv, logger: Logger): { internals: StartInternals; description: string | undefined } {
  const successes = integerVariable(env, failFdatasyncAfterVariable);
  const delayMs = integerVariable(env, slowFdatasyncVariable);
  const lane = laneVariable(env);
  if (successes === undefined && delayMs === undefined && lane === undefined) return { internals: {}, description: undefined };
  let fileSystem = nodeFileSystem;
  if (delayMs !== undefined) fileSystem = fdatasyncSlowedBy(fileSystem, delayMs);
  if (successes !== undefined) fileSystem = fdatasyncFailingAfter(fileSystem, successes);
  const description = [
    ...(successes === undefined ? [] : [`${failFdatasyncAfterVariable}=${successes}`]),
    ...(delayMs === undefined ? [] : [`${slowFdatasyncVariable}=${delayMs}`]),
    ...(lane === undefined ? [] : [`${syncLaneVariable}=${lane}`]),
  ].join(' ');
  // The real file system stays itself when only the lane is forced: the loop lane is taken only on it (group-commit.ts).
  const internals: StartInternals = {
    ...(fileSystem !== nodeFileSystem ? { logFileSystem: fileSystem } : {}),
    ...(lane !== undefined ? { syncLanes: forcedSyncLane(lane, () => logger.info({ lane }, forcedSyncLaneMessage)) } : {}),
  };
  return { internals, description };
}

function laneVariable(env: NodeJS.ProcessEnv): SyncLane | undefined {
  const value = env[syncLaneVariable];
  if (value === undefined || value === '') return undefined;
  if (value !== 'loop' && value !== 'pool') throw new Error(`${syncLaneVariable} must be loop or pool, got '${value}'`);
  return value;
}

/** Every lone batch on `lane`, whatever the load or how slow the last sync on the loop was; `firstUse` is told once. */
function forcedSyncLane(lane: SyncLane, firstUse: () => void): SyncLanes {
  let used = false;
  return {
    next: () => {
      if (!used) {
        used = true;
        firstUse();
      }
      return lane;
    },
    noteLoopSync: () => undefined,
  };
}

function integerVariable(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const value = env[name];
  if (value === undefined || value === '') return undefined;
  const number = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(number)) throw new Error(`${name} must be a non-negative integer, got '${value}'`);
  return number;
}

function fdatasyncSlowedBy(base: LogFileSystem, delayMs: number): LogFileSystem {
  return { ...base, fdatasync: (fd, callback) => base.fdatasync(fd, (error) => setTimeout(() => callback(error), delayMs)) };
}

function fdatasyncFailingAfter(base: LogFileSystem, successes: number): LogFileSystem {
  let calls = 0;
  return {
    ...base,
    fdatasync: (fd, callback) => {
      calls += 1;
      if (calls <= successes) return base.fdatasync(fd, callback);
      const error = Object.assign(new Error(`EIO: i/o error, fdatasync (injected by ${failFdatasyncAfterVariable})`), { code: 'EIO', errno: -5, syscall: 'fdatasync' });
      setImmediate(() => callback(error));
    },
  };
}
