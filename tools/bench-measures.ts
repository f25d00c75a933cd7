/**
 * What a benchmark reads off a broker from the outside: a process's resident
 * memory (Linux /proc) and the bytes of files under a directory (their
 * apparent sizes, as `du -sb` counts them).
 */
import * as fs from 'node:fs';
import { join } from 'node:path';

/** VmRSS of `pid` in bytes, or undefined when the process is gone or /proc is not there. */
export function rssBytes(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? undefined : Number(match[1]) * 1024;
  } catch {
    return undefined;
  }
}

/** Bytes and count of the regular files under `dir` (recursively) whose name `matches`. */
export function filesBytes(dir: string, matches: (name: string) => boolean = () => true): { bytes: number; files: number } {
  let bytes = 0;
  let files = 0;
  let entries: fs.Dirent[];
  try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return { bytes, files }; } // removed while we walked
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const inner = filesBytes(path, matches);
      bytes += inner.bytes;
      files += inner.files;
    } else if (entry.isFile() && matches(entry.name)) {
      try {
        bytes += fs.statSync(path).size;
        files += 1;
      } catch { /* removed while we walked (a snapshot or journal file being replaced) */ }
    }
  }
  return { bytes, files };
}
