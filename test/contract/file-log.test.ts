/**
 * The log contract (log-contract.ts) on the segmented file log (src/log/log.ts), on the real disk:
 * every capability applies. Failures are injected through the log's file-system seam.
 * It runs twice: with the lone batch's lane chosen by the machine's load, as in production, and with
 * every lone batch on the event loop, where it is written through an O_DSYNC descriptor (write and sync
 * in one call, src/log/data-sync-writer.ts) — a loaded machine would never take that path.
 */
import { truncateSync } from 'node:fs';
import { join } from 'node:path';
import { describe } from 'vitest';
import { nodeFileSystem, SegmentedLog, type LogFileSystem, type LogOptions, type SyncLanes } from '../../src/log/index.js';
import { tempDirectory } from '../support/kit.js';
import { errnoError } from '../support/simulated-storage.js';
import { logContract, type LogFactory, type LogHandle } from './log-contract.js';

/** The real file system, except that every fdatasync fails with EIO (the first one is fatal for the log). */
const failingFdatasync: LogFileSystem = {
  ...nodeFileSystem,
  fdatasync: (_fd, callback) => void setImmediate(() => callback(errnoError('EIO', 'fdatasync'))),
};

/** Every lone batch on the event loop, whatever the load: written through the O_DSYNC descriptor. */
const loopLane: SyncLanes = { next: () => 'loop', noteLoopSync: () => undefined };

export const fileLogFactory: LogFactory = fileLogFactoryWith({});

function fileLogFactoryWith(extra: Partial<LogOptions>): LogFactory {
  return {
    capabilities: { segments: true, tornTails: true, retention: true },
    async create(options = {}): Promise<LogHandle> {
      const directory = tempDirectory('cairn-file-log-contract-');
      const settings: LogOptions = { dir: directory.path, retentionBytes: 0, ...extra, ...(options.segmentBytesMax === undefined ? {} : { segmentBytesMax: options.segmentBytesMax }) };
      let log = await SegmentedLog.open(settings);
      return {
        get log() {
          return log;
        },
        async reopen() {
          await log.close();
          log = await SegmentedLog.open(settings);
          return log;
        },
        async failNextSync() {
          await log.close();
          log = await SegmentedLog.open({ ...settings, fileSystem: failingFdatasync });
        },
        async tearTail() {
          const last = log.segments().at(-1)!;
          if (last.lastLsn < last.firstLsn) throw new Error('tearTail: the last segment holds no record');
          await log.close();
          // Inside the last frame: a write cut short by a crash (the zero-filled space after it goes too).
          truncateSync(join(directory.path, last.file), last.bytes - 7);
        },
        segmentCount: () => log.segments().length,
        async destroy() {
          await log.close();
          directory.remove();
        },
      };
    },
  };
}

describe('the log contract: SegmentedLog', () => logContract(fileLogFactory));
describe('the log contract: SegmentedLog, every lone batch written through O_DSYNC', () => logContract(fileLogFactoryWith({ syncLanes: loopLane })));
