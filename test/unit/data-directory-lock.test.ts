/**
 * The data directory lock (src/log/directory-lock.ts), one row of its decision
 * table per test: a live holder is refused by pid, a holder that is gone (not
 * running, pid reused, rebooted) is taken over, a holder we cannot check
 * (another host, another pid namespace, a file Cairn did not write) is
 * refused. The child-process version (two real brokers) is in
 * test/crash/data-directory-lock.test.ts.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { DataDirectoryLockedError, lockDataDirectory, lockFileName, type LockHolder } from '../../src/log/directory-lock.js';
import { SegmentedLog } from '../../src/log/index.js';
import { tempDirectory } from '../support/kit.js';

const directories: Array<{ remove(): void }> = [];
afterEach(() => {
  for (const directory of directories.splice(0)) directory.remove();
});

function freshDirectory(): string {
  const directory = tempDirectory('cairn-lock-');
  directories.push(directory);
  return directory.path;
}

/** What this process writes as holder, read back from a lock it takes and releases. */
function ownRecord(): LockHolder {
  const dir = freshDirectory();
  const lock = lockDataDirectory(dir, 'probe');
  const record = JSON.parse(fs.readFileSync(join(dir, lockFileName), 'utf8')) as LockHolder;
  lock.release();
  return record;
}

function writeLock(dir: string, holder: Partial<LockHolder>): void {
  fs.writeFileSync(join(dir, lockFileName), `${JSON.stringify({ command: 'cairn serve', since: '2026-12-01T00:00:00.000Z', ...holder })}\n`);
}

/** A pid that certainly ran and is certainly gone: a child that has exited and been reaped. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

function warningsInto(warnings: Array<Record<string, unknown>>): pino.Logger {
  return pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line) as Record<string, unknown>) });
}

describe('the data directory lock', () => {
  it('refuses a second holder while the first lives, naming its pid; after release it can be taken again', () => {
    const dir = freshDirectory();
    const first = lockDataDirectory(dir, 'cairn serve');
    const error = (() => {
      try {
        lockDataDirectory(dir, 'cairn serve');
        return undefined;
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(DataDirectoryLockedError);
    expect((error as DataDirectoryLockedError).message).toContain(`in use by pid ${process.pid}`);
    expect((error as DataDirectoryLockedError).message).not.toContain('\n');
    first.release();
    expect(fs.existsSync(join(dir, lockFileName))).toBe(false);
    lockDataDirectory(dir, 'cairn serve').release();
    // No temporary file is left behind.
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('takes over the lock of a process that is no longer running, and says so', () => {
    const dir = freshDirectory();
    const me = ownRecord();
    const pid = deadPid();
    writeLock(dir, { ...me, pid, startTicks: '1' });
    const warnings: Array<Record<string, unknown>> = [];
    const lock = lockDataDirectory(dir, 'cairn serve', warningsInto(warnings));
    expect(JSON.parse(fs.readFileSync(join(dir, lockFileName), 'utf8'))).toMatchObject({ pid: process.pid });
    expect(warnings.map((w) => w['why'])).toEqual([`pid ${pid} is not running`]);
    lock.release();
  });

  it('takes over a lock whose pid is running but is another process (pid reused: another start time)', () => {
    const dir = freshDirectory();
    const me = ownRecord();
    // Our own pid, as a previous holder with that pid would have recorded it: same pid, earlier start.
    writeLock(dir, { ...me, startTicks: String(Number(me.startTicks) - 1) });
    const warnings: Array<Record<string, unknown>> = [];
    lockDataDirectory(dir, 'cairn serve', warningsInto(warnings)).release();
    expect(String(warnings[0]?.['why'])).toContain('pid reused');
  });

  it('takes over a lock written before a reboot (another boot id, same host)', () => {
    const dir = freshDirectory();
    const me = ownRecord();
    if (me.bootId === null) return; // no /proc: the boot id is unknown here
    writeLock(dir, { ...me, bootId: '00000000-0000-0000-0000-000000000000' });
    lockDataDirectory(dir, 'cairn serve').release();
  });

  it('refuses a lock held on another host or in another pid namespace (liveness cannot be checked), and a file Cairn did not write', () => {
    const dir = freshDirectory();
    const me = ownRecord();
    writeLock(dir, { ...me, pid: deadPid(), host: `not-${hostname()}` });
    expect(() => lockDataDirectory(dir, 'cairn serve')).toThrow(/on not-.*another host/);
    if (me.pidNamespace !== null) {
      writeLock(dir, { ...me, pid: deadPid(), pidNamespace: 'pid:[1]' });
      expect(() => lockDataDirectory(dir, 'cairn serve')).toThrow(/another pid namespace/);
    }
    fs.writeFileSync(join(dir, lockFileName), 'garbage');
    expect(() => lockDataDirectory(dir, 'cairn serve')).toThrow(/lock file Cairn did not write/);
    expect(fs.readFileSync(join(dir, lockFileName), 'utf8')).toBe('garbage');
  });

  it('is not part of the log: a fresh directory holding only the lock becomes a log', async () => {
    const dir = freshDirectory();
    const lock = lockDataDirectory(dir, 'cairn serve');
    const log = await SegmentedLog.open({ dir });
    expect(log.nextLsn).toBe(1);
    await log.close();
    lock.release();
  });
});
