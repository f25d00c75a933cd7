/**
 * A roll that cannot open the next segment because the process (EMFILE) or the
 * system (ENFILE) is out of file descriptors is a refusal for now, not a
 * failure: appends go on being acknowledged in the current segment, and the
 * roll happens once descriptors are back. Only a failed write or fdatasync
 * stops the log for good. (Issue 11, defect 4: ~19,900 idle HTTP connections
 * made a roll fail with EMFILE, and the log refused every append after it.)
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeFileSystem, type LogFileSystem, type OpenFlags } from '../../src/log/file-system.js';
import { openLogReader, SegmentedLog, type AppendRecord } from '../../src/log/index.js';
import { segmentFileName } from '../../src/log/segment.js';
import { tempDirectory, until } from '../support/kit.js';

const directories: Array<{ remove(): void }> = [];
afterEach(() => {
  for (const directory of directories.splice(0)) directory.remove();
});

/** The real file system, except that while `short` holds, opens of `which` fail with `code`. */
function descriptorShortFileSystem(which: 'directory' | 'segment', code: 'EMFILE' | 'ENFILE'): LogFileSystem & { short: boolean; refused: number } {
  const fileSystem = {
    ...nodeFileSystem,
    short: false,
    refused: 0,
    openAsync(path: string, flags: OpenFlags): Promise<number> {
      const isSegment = path.endsWith('.seg');
      if (fileSystem.short && isSegment === (which === 'segment')) {
        fileSystem.refused += 1;
        return Promise.reject(Object.assign(new Error(`${code}: too many open files, open '${path}' (injected)`), { code, syscall: 'open' }));
      }
      return nodeFileSystem.openAsync(path, flags);
    },
  };
  return fileSystem;
}

const record = (i: number): AppendRecord => ({ kind: 1, timestamp: 1_790_000_000_000 + i, body: { i, padding: 'x'.repeat(100) } });

describe('a roll out of file descriptors', () => {
  for (const [which, code] of [['directory', 'EMFILE'], ['segment', 'ENFILE']] as const) {
    it(`keeps acknowledging appends when the ${which} open of a roll fails with ${code}, and rolls once descriptors are back`, async () => {
      const directory = tempDirectory('cairn-roll-emfile-');
      directories.push(directory);
      const warnings: Array<Record<string, unknown>> = [];
      const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line) as Record<string, unknown>) });
      const fileSystem = descriptorShortFileSystem(which, code);
      const log = await SegmentedLog.open({ dir: directory.path, segmentBytesMax: 1024, fileSystem, logger });
      fileSystem.short = true;
      // 60 records of ~150 bytes: several segments' worth, every one acknowledged while no roll can happen.
      for (let i = 1; i <= 60; i++) expect(await log.appendOne(record(i))).toBe(i);
      expect(log.failed).toBeUndefined();
      expect(fileSystem.refused).toBeGreaterThan(0);
      expect(log.segments()).toHaveLength(1);
      expect(warnings.some((w) => String(w['msg']).includes('out of file descriptors'))).toBe(true);

      fileSystem.short = false;
      let next = 61;
      // The retry comes after rollRetryDelayMs; an append after it rolls.
      await until(async () => {
        await log.appendOne(record(next++));
        return log.segments().length > 1;
      }, 'a roll after the descriptors came back');
      const lastLsn = next - 1;
      await log.close();

      const reader = openLogReader(join(directory.path));
      const report = reader.verify();
      expect(report.ok).toBe(true);
      expect(report.tornTail).toBeUndefined();
      expect([...reader.read()].map((r) => r.lsn)).toEqual(Array.from({ length: lastLsn }, (_, i) => i + 1));
      const reopened = await SegmentedLog.open({ dir: directory.path });
      expect(reopened.nextLsn).toBe(lastLsn + 1);
      await reopened.close();
    });
  }

  it('still fails for good when the open fails for another reason (EACCES)', async () => {
    const directory = tempDirectory('cairn-roll-eacces-');
    directories.push(directory);
    const fileSystem: LogFileSystem = {
      ...nodeFileSystem,
      // Every segment after the first: the roll's.
      openAsync: (path, flags) => (path.endsWith('.seg') && !path.endsWith(segmentFileName(1)) ? Promise.reject(Object.assign(new Error('EACCES: injected'), { code: 'EACCES' })) : nodeFileSystem.openAsync(path, flags)),
    };
    const log = await SegmentedLog.open({ dir: directory.path, segmentBytesMax: 1024, fileSystem });
    let refused = 0;
    for (let i = 1; i <= 30; i++) await log.appendOne(record(i)).catch(() => (refused += 1));
    expect(refused).toBeGreaterThan(0);
    expect(log.failed?.message).toContain('segment roll');
    await log.close();
  });
});
