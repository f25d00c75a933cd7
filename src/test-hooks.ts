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
 */
import { nodeFileSystem, type LogFileSystem } from './log/file-system.js';
import type { StartInternals } from './server.js';

export const failFdatasyncAfterVariable = 'CAIRN_TEST_HOOK_FAIL_FDATASYNC_AFTER';
export const slowFdatasyncVariable = 'CAIRN_TEST_HOOK_SLOW_FDATASYNC_MS';

/** The hooks the environment asks for, and a description for the start-up warning (undefined: none). */
export function testHooksFrom(env: NodeJS.ProcessEnv): { internals: StartInternals; description: string | undefined } {
  const successes = integerVariable(env, failFdatasyncAfterVariable);
  const delayMs = integerVariable(env, slowFdatasyncVariable);
  if (successes === undefined && delayMs === undefined) return { internals: {}, description: undefined };
  let fileSystem = nodeFileSystem;
  if (delayMs !== undefined) fileSystem = fdatasyncSlowedBy(fileSystem, delayMs);
  if (successes !== undefined) fileSystem = fdatasyncFailingAfter(fileSystem, successes);
  const description = [
    ...(successes === undefined ? [] : [`${failFdatasyncAfterVariable}=${successes}`]),
    ...(delayMs === undefined ? [] : [`${slowFdatasyncVariable}=${delayMs}`]),
  ].join(' ');
  return { internals: { logFileSystem: fileSystem }, description };
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
