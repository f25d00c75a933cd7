/**
 * A client run while this thread's event loop is stalled: the client is an
 * ES module run in a child process by spawnSync, which blocks this thread (a
 * broker started in-process, its event loop included) until the child ends.
 * What still answers meanwhile answers from another thread: the HTTP
 * listener's socket thread (src/http/socket-thread.js).
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDirectory } from './kit.js';

/**
 * Runs `client` (an ES module's body; `port` is bound to `port`) in a child process while this thread is blocked until
 * it ends; returns what it printed and what it wrote to stderr. The child prints `NO ANSWER` and exits after `deadlineMs`.
 */
export function whileLoopStalled(port: number, client: string, deadlineMs = 10_000): { stdout: string; stderr: string } {
  const child = runModule(`const port = ${port}; setTimeout(() => { console.log('NO ANSWER'); process.exit(0); }, ${deadlineMs}).unref();\n${client}`, deadlineMs + 10_000);
  return { stdout: child.stdout, stderr: child.stderr };
}

/** Runs `script` as an ES module in a child process (blocking this thread until it ends). */
export function runModule(script: string, timeoutMs: number): SpawnSyncReturns<string> {
  const directory = tempDirectory('cairn-stalled-loop-');
  try {
    const file = join(directory.path, 'client.mjs');
    writeFileSync(file, script);
    return spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: timeoutMs });
  } finally {
    directory.remove();
  }
}
