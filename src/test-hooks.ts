/**
 * Fault injection for tests that run `cairn serve` as a child process
 * (test/crash). Read from the environment by the CLI only: no flag, not in
 * --help, and nothing changes unless a CAIRN_TEST_HOOK_* variable is set.
 *
 *   CAIRN_TEST_HOOK_FAIL_FDATASYNC_AFTER=N   the log's fdatasyncs after the
 *                                            first N fail with EIO
 */
import { nodeFileSystem, type LogFileSystem } from './log/file-system.js';
import type { StartInternals } from './server.js';

export const failFdatasyncAfterVariable = 'CAIRN_TEST_HOOK_FAIL_FDATASYNC_AFTER';

/** The hooks the environment asks for, and a description for the start-up warning (undefined: none). */
export function testHooksFrom(env: NodeJS.ProcessEnv): { internals: StartInternals; description: string | undefined } {
  const value = env[failFdatasyncAfterVariable];
  if (value === undefined || value === '') return { internals: {}, description: undefined };
  const successes = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(successes)) throw new Error(`${failFdatasyncAfterVariable} must be a non-negative integer, got '${value}'`);
  return { internals: { logFileSystem: fdatasyncFailingAfter(successes) }, description: `${failFdatasyncAfterVariable}=${successes}` };
}

function fdatasyncFailingAfter(successes: number): LogFileSystem {
  let calls = 0;
  return {
    ...nodeFileSystem,
    fdatasync: (fd, callback) => {
      calls += 1;
      if (calls <= successes) return nodeFileSystem.fdatasync(fd, callback);
      const error = Object.assign(new Error(`EIO: i/o error, fdatasync (injected by ${failFdatasyncAfterVariable})`), { code: 'EIO', errno: -5, syscall: 'fdatasync' });
      setImmediate(() => callback(error));
    },
  };
}
