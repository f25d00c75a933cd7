/**
 * One data directory, one owner: `cairn serve` and `cairn recover --to` hold
 * an exclusive lock on their data directory for as long as they run, so two
 * brokers never append to one log (each would overwrite the other's frames
 * while both acknowledge). The read-only `inspect` commands take no lock.
 *
 * Why a lock file and not flock(2): Node has no flock in core, and a native
 * addon is a build dependency for one call. proper-lockfile (the usual npm
 * answer) decides staleness by the lock's mtime, which a broker must keep
 * refreshing: a process paused longer than the stale window (a stopped
 * container, a long GC, a suspended VM) would lose its lock to a second
 * broker while it still believes it holds it. Here staleness is a fact about
 * the holder, not a clock:
 *
 *   cairn.lock (JSON, one line)
 *     pid            the holder's process id
 *     startTicks     field 22 of /proc/<pid>/stat: when that process started,
 *                    in clock ticks since boot. A reused pid has another one.
 *     bootId         /proc/sys/kernel/random/boot_id: a reboot ends every lock.
 *     pidNamespace   /proc/self/ns/pid: pids are only comparable inside one.
 *     host, command, since   for the operator's message.
 *
 * Decision table for a lock file that is already there (verdict, in order):
 *   host differs                          refuse: another machine (shared file
 *                                         system) or container; we cannot see it
 *   boot id differs                       stale: the machine rebooted since
 *   pid namespace differs                 refuse: its pid means nothing here
 *   pid not running (ESRCH), or a zombie  stale: killed (kill -9) or crashed
 *   running, start time differs           stale: the pid was reused
 *   running, same start time              refuse, naming the pid
 *   not parseable                         refuse: never written by Cairn (see below)
 *
 * Atomicity. The lock file appears whole: our record goes into a private
 * temporary file first and is then hard-linked to `cairn.lock`; link(2) fails
 * with EEXIST if the name exists, so exactly one of two racing starters wins,
 * and nobody ever reads a half-written lock. A stale lock is removed by
 * renaming it aside and checking that what moved is the inode judged stale;
 * if a racing starter had replaced it meanwhile, it is linked back. Only then
 * is the link retried, so the winner is again decided by link(2). (Residual:
 * three starters interleaving inside that rename → link-back window right
 * after a crash; the supervisor starts one.)
 *
 * Without /proc (not Linux) the start time, boot and namespace are unknown and
 * the verdict rests on the pid alone.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import { isErrnoCode, LogError } from './errors.js';

export const lockFileName = 'cairn.lock';
// A starter that keeps finding a fresh lock where it removed a stale one gives up after this many rounds.
const lockAttemptsMax = 5;

/** The lock file and the private temporary files it is linked from: not part of the log. */
export function isLockFileName(name: string): boolean {
  return name === lockFileName || name.startsWith(`${lockFileName}.`);
}

export interface LockHolder {
  readonly pid: number;
  readonly startTicks: string | null;
  readonly bootId: string | null;
  readonly pidNamespace: string | null;
  readonly host: string;
  readonly command: string;
  readonly since: string;
}

/** Another process holds the data directory (or may: on another host). */
export class DataDirectoryLockedError extends LogError {
  constructor(
    readonly dir: string,
    readonly holder: LockHolder,
    reason: string,
  ) {
    super('ELOCKED', `data directory ${dir} is in use by pid ${holder.pid} on ${holder.host} (${holder.command} since ${holder.since})${reason}`);
  }
}

export interface DataDirectoryLock {
  readonly dir: string;
  /** Removes the lock file if it is still ours. Idempotent. */
  release(): void;
}

/** Takes the lock on `dir` (which must exist) for this process, or throws DataDirectoryLockedError. */
export function lockDataDirectory(dir: string, command: string, logger?: Logger): DataDirectoryLock {
  const lockPath = join(dir, lockFileName);
  const me = currentProcess(command);
  const temporary = join(dir, `${lockFileName}.${process.pid}-${randomBytes(4).toString('hex')}`);
  fs.writeFileSync(temporary, `${JSON.stringify(me)}\n`, { flag: 'wx' });
  try {
    for (let attempt = 0; attempt < lockAttemptsMax; attempt++) {
      if (tryLink(temporary, lockPath)) return heldLock(dir, lockPath, fs.statSync(temporary).ino);
      const found = readLock(lockPath);
      if (found === undefined) continue;
      if (found.holder === undefined) {
        throw new LogError('ELOCKED', `data directory ${dir} has a lock file Cairn did not write (${lockPath}); remove it if no broker uses the directory`);
      }
      const verdict = judge(found.holder, me);
      if (verdict.live) throw new DataDirectoryLockedError(dir, found.holder, verdict.reason);
      if (removeIfStill(lockPath, found.ino)) logger?.warn({ dir, previous: found.holder, why: verdict.reason }, 'took over the data directory lock of a process that is gone');
    }
    throw new LogError('ELOCKED', `data directory ${dir}: another process keeps taking its lock (${lockPath}); is a second broker starting?`);
  } finally {
    fs.rmSync(temporary, { force: true });
  }
}

/** Throws DataDirectoryLockedError when a process holds `dir`'s lock (or may: another host); takes nothing. */
export function checkNotLocked(dir: string): void {
  const found = readLock(join(dir, lockFileName));
  if (found?.holder === undefined) return;
  const verdict = judge(found.holder, currentProcess(''));
  if (verdict.live) throw new DataDirectoryLockedError(dir, found.holder, verdict.reason);
}

function heldLock(dir: string, lockPath: string, ino: number): DataDirectoryLock {
  let held = true;
  return {
    dir,
    release: () => {
      if (!held) return;
      held = false;
      // Never remove a lock that is no longer ours (an operator removed ours and another broker started).
      if (readLock(lockPath)?.ino === ino) fs.rmSync(lockPath, { force: true });
    },
  };
}

function tryLink(from: string, to: string): boolean {
  try {
    fs.linkSync(from, to);
    return true;
  } catch (error) {
    if (isErrnoCode(error, 'EEXIST')) return false;
    throw error;
  }
}

function readLock(lockPath: string): { ino: number; holder: LockHolder | undefined } | undefined {
  let fd: number;
  try {
    fd = fs.openSync(lockPath, 'r');
  } catch (error) {
    if (isErrnoCode(error, 'ENOENT')) return undefined;
    throw error;
  }
  try {
    return { ino: fs.fstatSync(fd).ino, holder: parseHolder(fs.readFileSync(fd, 'utf8')) };
  } finally {
    fs.closeSync(fd);
  }
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (!Number.isSafeInteger(value.pid) || typeof value.host !== 'string') return undefined;
    return {
      pid: value.pid!, host: value.host, startTicks: value.startTicks ?? null, bootId: value.bootId ?? null,
      pidNamespace: value.pidNamespace ?? null, command: String(value.command ?? '?'), since: String(value.since ?? '?'),
    };
  } catch {
    return undefined;
  }
}

/** Renames the lock aside; keeps it gone only if it is the inode judged stale. True when it was removed. */
function removeIfStill(lockPath: string, staleIno: number): boolean {
  const aside = `${lockPath}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    fs.renameSync(lockPath, aside);
  } catch (error) {
    if (isErrnoCode(error, 'ENOENT')) return false;
    throw error;
  }
  try {
    if (fs.statSync(aside).ino === staleIno) return true;
    // A racing starter replaced the stale lock with its own between our read and the rename: give it back.
    tryLink(aside, lockPath);
    return false;
  } finally {
    fs.rmSync(aside, { force: true });
  }
}

function judge(holder: LockHolder, me: LockHolder): { live: boolean; reason: string } {
  const refuse = (reason: string): { live: boolean; reason: string } => ({ live: true, reason });
  const stale = (reason: string): { live: boolean; reason: string } => ({ live: false, reason });
  if (holder.host !== me.host) return refuse(`; it is another host, so Cairn cannot tell whether it still runs: if it does not, remove ${lockFileName}`);
  if (differs(holder.bootId, me.bootId)) return stale('the machine has rebooted since');
  if (differs(holder.pidNamespace, me.pidNamespace)) return refuse(`; it runs in another pid namespace (container), so Cairn cannot tell whether it still runs: if it does not, remove ${lockFileName}`);
  const running = processStatus(holder.pid);
  if (running === 'gone') return stale(`pid ${holder.pid} is not running`);
  if (running !== 'unknown' && holder.startTicks !== null && running.startTicks !== holder.startTicks) return stale(`pid ${holder.pid} is another process now (pid reused)`);
  return refuse(': stop it first, or give another data directory');
}

function differs(a: string | null, b: string | null): boolean {
  return a !== null && b !== null && a !== b;
}

/** 'gone' for no such process or a zombie; its start time when /proc tells; 'unknown' when only kill(0) can. */
function processStatus(pid: number): 'gone' | 'unknown' | { startTicks: string } {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists, under another user.
    if (isErrnoCode(error, 'ESRCH')) return 'gone';
    if (!isErrnoCode(error, 'EPERM')) throw error;
  }
  const stat = readProcStat(pid);
  if (stat === undefined) return fs.existsSync('/proc/self/stat') ? 'gone' : 'unknown';
  if (stat.state === 'Z' || stat.state === 'X') return 'gone';
  return { startTicks: stat.startTicks };
}

/** Fields 3 (state) and 22 (starttime) of /proc/<pid>/stat; the command name (field 2) may hold spaces and parentheses. */
function readProcStat(pid: number | 'self'): { state: string; startTicks: string } | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const startTicks = fields[19];
  return state === undefined || startTicks === undefined ? undefined : { state, startTicks };
}

function readOptional(read: () => string): string | null {
  try {
    return read().trim();
  } catch {
    return null;
  }
}

function currentProcess(command: string): LockHolder {
  return {
    pid: process.pid,
    startTicks: readProcStat('self')?.startTicks ?? null,
    bootId: readOptional(() => fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8')),
    pidNamespace: readOptional(() => fs.readlinkSync('/proc/self/ns/pid')),
    host: hostname(),
    command,
    since: new Date().toISOString(),
  };
}
