/**
 * A start-up check: the connection caps of the listeners that are on, plus
 * the descriptors the broker needs for itself, against the process's limit on
 * open files (the soft RLIMIT_NOFILE, read from /proc/self/limits; elsewhere
 * the check is skipped). When the caps add up to more than the limit, the
 * limit decides when connections are refused, not the caps: the log survives
 * that (a roll out of descriptors is retried, see log/group-commit.ts), but
 * the operator is told to raise LimitNOFILE or expect refusals earlier.
 */
import * as fs from 'node:fs';
import type { Logger } from './logger.js';

// The log's active segment and directory, a roll's new segment, a snapshot being written, replay and
// retention reads, the listening sockets, stdio, pino and node's own: generously rounded up.
export const brokerDescriptorsReserved = 128;

/** This process's soft limit on open files, or undefined when unlimited or unknown. */
export function currentOpenFilesLimit(): number | undefined {
  return openFilesLimit(readProcLimits());
}

/** The soft limit on open files in the text of /proc/<pid>/limits. */
export function openFilesLimit(limitsText: string | undefined): number | undefined {
  const match = limitsText === undefined ? null : /^Max open files\s+(\d+|unlimited)\s/m.exec(limitsText);
  if (match === null || match[1] === 'unlimited') return undefined;
  return Number(match[1]);
}

export function checkDescriptorBudget(connectionCaps: Readonly<Record<string, number>>, logger: Logger, limit: number | undefined): void {
  if (limit === undefined) return;
  const connections = Object.values(connectionCaps).reduce((sum, cap) => sum + cap, 0);
  const needed = connections + brokerDescriptorsReserved;
  if (needed <= limit) return;
  logger.warn({ openFilesLimit: limit, connectionCaps, brokerDescriptorsReserved, needed },
    `the open-files limit (${limit}) is below the connection caps plus what the broker needs (${needed}): connections will be refused at the limit, not at the caps; raise it (systemd: LimitNOFILE=${2 ** Math.ceil(Math.log2(needed))})`);
}

function readProcLimits(): string | undefined {
  try {
    return fs.readFileSync('/proc/self/limits', 'utf8');
  } catch {
    return undefined;
  }
}
