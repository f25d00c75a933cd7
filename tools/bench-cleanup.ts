/**
 * Cleanup that must happen however a benchmark ends: at the normal end, on an
 * uncaught error, and on Ctrl-C or a SIGTERM (which end a Node process without
 * its 'exit' handlers unless someone listens for them). Cleanups are
 * synchronous (SIGKILL to a process group, rmSync of a temp dir) because an
 * 'exit' handler cannot wait; they run newest first, so a broker is killed
 * before its data directory is removed.
 */

const cleanups: Array<() => void> = [];
let installed = false;

function runCleanups(): void {
  while (cleanups.length > 0) {
    const cleanup = cleanups.pop()!;
    try { cleanup(); } catch { /* the others must still run */ }
  }
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', runCleanups);
  // 128 + the signal number, as a shell reports a process ended by it.
  process.once('SIGINT', () => { runCleanups(); process.exit(130); });
  process.once('SIGTERM', () => { runCleanups(); process.exit(143); });
}

/** Registers `cleanup` to run on any exit path; the returned function unregisters it (after a normal cleanup). */
export function cleanupOnExit(cleanup: () => void): () => void {
  install();
  cleanups.push(cleanup);
  return () => {
    const index = cleanups.lastIndexOf(cleanup);
    if (index >= 0) cleanups.splice(index, 1);
  };
}
