/**
 * Unit tests of the log's edges: directories that are not logs, bad headers,
 * injected write and fsync failures, a zero fill on a full disk, bad records,
 * closing, lazy appends, the frame layout, and the offline reader's report.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { decode, encode } from '@msgpack/msgpack';
import { pino } from 'pino';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { nodeFileSystem, type LogFileSystem } from './file-system.js';
import { lazySyncDelayMs } from './group-commit.js';
import {
  DiskFullError,
  InvalidRecordError,
  LogClosedError,
  LogFailedError,
  NotACairnLogError,
  openLogReader,
  SegmentedLog,
  SegmentHeaderError,
  type AppendRecord,
} from './index.js';
import { encodeFrame, frameBytesMax } from './record.js';

const root = fs.mkdtempSync(join(os.tmpdir(), 'cairn-log-unit-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let dirCounter = 0;
const freshDir = (): string => join(root, String(dirCounter++));
const rec = (i: number): AppendRecord => ({ kind: 1, timestamp: i, body: { i } });

function errnoError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: injected`), { code });
}

/** The real file system, except that the n-th fdatasync (or write) fails with `code`. */
function faultyFileSystem(fault: { call: 'write' | 'fdatasync'; nth: number; code: string; delayMs?: number }): LogFileSystem & { calls: { write: number; fdatasync: number } } {
  const calls = { write: 0, fdatasync: 0 };
  return {
    ...nodeFileSystem,
    calls,
    write: (fd, buffer, offset, length, position, callback) => {
      calls.write += 1;
      if (fault.call === 'write' && calls.write === fault.nth) return void setImmediate(() => callback(errnoError(fault.code), 0));
      nodeFileSystem.write(fd, buffer, offset, length, position, callback);
    },
    fdatasync: (fd, callback) => {
      calls.fdatasync += 1;
      if (fault.call === 'fdatasync' && calls.fdatasync === fault.nth) return void setTimeout(() => callback(errnoError(fault.code)), fault.delayMs ?? 0);
      nodeFileSystem.fdatasync(fd, callback);
    },
  };
}

describe('directories that are not logs', () => {
  it('refuses a directory holding foreign files, and leaves them alone', async () => {
    const dir = freshDir();
    fs.mkdirSync(dir);
    fs.writeFileSync(join(dir, 'notes.txt'), 'mine');
    const error = await SegmentedLog.open({ dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotACairnLogError);
    expect((error as NotACairnLogError).code).toBe('ENOTCAIRN');
    expect((error as Error).message).toContain('notes.txt');
    expect(fs.readdirSync(dir)).toEqual(['notes.txt']);
    expect(() => openLogReader(dir)).toThrow(NotACairnLogError);
  });

  it('creates a log in a missing or empty directory', async () => {
    for (const dir of [freshDir(), freshDir()]) {
      if (dir.endsWith('1')) fs.mkdirSync(dir);
      const log = await SegmentedLog.open({ dir });
      expect([log.nextLsn, log.firstLsn, log.durableLsn]).toEqual([1, 1, 0]);
      expect(fs.readdirSync(dir)).toEqual(['00000000000000000001.seg']);
      await log.close();
    }
  });

  it('refuses a segment file whose header is not a Cairn header, naming the file', async () => {
    const dir = freshDir();
    fs.mkdirSync(dir);
    fs.writeFileSync(join(dir, '00000000000000000001.seg'), Buffer.alloc(100, 7));
    const error = await SegmentedLog.open({ dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SegmentHeaderError);
    expect((error as SegmentHeaderError).code).toBe('ESEGMENTHEADER');
    expect((error as Error).message).toMatch(/00000000000000000001\.seg.*wrong magic/);
  });
});

describe('write and fsync failures are fatal', () => {
  it('a failed fdatasync rejects the batch, sets failed, and refuses every later append', async () => {
    const dir = freshDir();
    const fileSystem = faultyFileSystem({ call: 'fdatasync', nth: 3, code: 'EIO' });
    const log = await SegmentedLog.open({ dir, fileSystem });
    expect(await log.appendOne(rec(1))).toBe(1);
    expect(await log.append([rec(2), rec(3)])).toEqual([2, 3]);
    const doomed = [log.appendOne(rec(4)), log.append([rec(5)])];
    for (const promise of doomed) await expect(promise).rejects.toBeInstanceOf(LogFailedError);
    expect(log.failed).toBeInstanceOf(LogFailedError);
    expect(log.failed?.code).toBe('ELOGFAILED');
    expect(log.durableLsn).toBe(3);
    await expect(log.appendOne(rec(6))).rejects.toBe(log.failed);
    await expect(log.append([rec(6)])).rejects.toBe(log.failed);
    await log.close();
    // Restarting into recovery keeps at least everything acknowledged.
    const reopened = await SegmentedLog.open({ dir });
    expect([...reopened.read()].map((r) => r.lsn).slice(0, 3)).toEqual([1, 2, 3]);
    await reopened.close();
  });

  it('ENOSPC on write is a DiskFullError (a LogFailedError with code ENOSPC)', async () => {
    const dir = freshDir();
    const log = await SegmentedLog.open({ dir, fileSystem: faultyFileSystem({ call: 'write', nth: 2, code: 'ENOSPC' }) });
    await log.appendOne(rec(1));
    const error = await log.appendOne(rec(2)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DiskFullError);
    expect(error).toBeInstanceOf(LogFailedError);
    expect((error as DiskFullError).code).toBe('ENOSPC');
    await expect(log.appendOne(rec(3))).rejects.toBeInstanceOf(DiskFullError);
    await log.close();
  });

  it('with batches pipelined, a failed sync rejects every outstanding append, not only its own batch', async () => {
    const dir = freshDir();
    const fileSystem = faultyFileSystem({ call: 'fdatasync', nth: 1, code: 'EIO', delayMs: 30 });
    const log = await SegmentedLog.open({ dir, fileSystem });
    const first = log.appendOne(rec(1));
    // While that (slow, doomed) sync runs, later batches are written behind it.
    await new Promise((resolve) => setTimeout(resolve, 10));
    const later = [log.appendOne(rec(2)), log.append([rec(3), rec(4)])];
    const results = await Promise.allSettled([first, ...later]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(fileSystem.calls.write).toBe(2);
    expect(log.durableLsn).toBe(0);
    await log.close();
  });
});

describe('zero fill on a full disk', () => {
  it('a failed fill is logged and the log goes on: every append durable, nothing refused', async () => {
    const dir = freshDir();
    const warnings: Record<string, unknown>[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line) as Record<string, unknown>) });
    let refusedFills = 0;
    // ENOSPC for the fill's writes (all zeros); the log's own frames are never all zeros.
    const fileSystem: LogFileSystem = {
      ...nodeFileSystem,
      write: (fd, buffer, offset, length, position, callback) => {
        if (buffer.subarray(offset, offset + length).every((b) => b === 0)) {
          refusedFills += 1;
          return void setImmediate(() => callback(errnoError('ENOSPC'), 0));
        }
        nodeFileSystem.write(fd, buffer, offset, length, position, callback);
      },
    };
    const log = await SegmentedLog.open({ dir, segmentBytesMax: 1 << 20, fileSystem, preallocate: true, logger });
    const payload = new Uint8Array(4096).fill(7);
    for (let i = 1; i <= 64; i++) expect(await log.appendOne({ kind: 1, timestamp: i, body: { i, payload } })).toBe(i);
    expect(refusedFills).toBe(1);
    expect(warnings.some((w) => String(w['msg']).includes('could not zero-fill'))).toBe(true);
    expect(log.failed).toBeUndefined();
    await log.close();
    const reopened = await SegmentedLog.open({ dir });
    expect([...reopened.read()].map((r) => r.lsn)).toEqual(Array.from({ length: 64 }, (_, i) => i + 1));
    await reopened.close();
  });
});

describe('bad records', () => {
  it('rejects a bad kind, timestamp or body without using an LSN, and keeps going', async () => {
    const log = await SegmentedLog.open({ dir: freshDir() });
    const bad: unknown[] = [
      { kind: 0, timestamp: 1, body: null },
      { kind: 256, timestamp: 1, body: null },
      { kind: 1.5, timestamp: 1, body: null },
      { kind: 1, timestamp: Number.NaN, body: null },
      { kind: 1, timestamp: 1, body: 10n },
      { kind: 1, timestamp: 1, body: new Uint8Array(frameBytesMax) },
    ];
    for (const record of bad) {
      await expect(log.appendOne(record as AppendRecord)).rejects.toBeInstanceOf(InvalidRecordError);
      await expect(log.append([rec(0), record as AppendRecord])).rejects.toBeInstanceOf(InvalidRecordError);
    }
    expect(log.nextLsn).toBe(1);
    expect(await log.append([rec(1), rec(2)])).toEqual([1, 2]);
    expect([...log.read()].map((r) => r.body)).toEqual([{ i: 1 }, { i: 2 }]);
    await log.close();
  });
});

describe('closing', () => {
  it('waits for appends in flight, then refuses new ones', async () => {
    const log = await SegmentedLog.open({ dir: freshDir() });
    let acknowledged = false;
    const inFlight = log.append([rec(1), rec(2)]).then(() => (acknowledged = true));
    await log.close();
    expect(acknowledged).toBe(true);
    await inFlight;
    await expect(log.appendOne(rec(3))).rejects.toBeInstanceOf(LogClosedError);
  });
});

describe('lazy appends (records nobody waits on)', () => {
  const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  /** Runs `test` with setTimeout faked: the lazy sync timer never fires, so it cannot be what makes records durable. */
  async function withoutTimeouts(test: () => Promise<void>): Promise<void> {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      await test();
    } finally {
      vi.useRealTimers();
    }
  }

  async function openCounting(options: { segmentBytesMax?: number } = {}): Promise<{ log: SegmentedLog; dir: string; syncs: number[] }> {
    const dir = freshDir();
    const syncs: number[] = [];
    const log = await SegmentedLog.open({ dir, ...options, onSync: (_seconds, records) => void syncs.push(records) });
    return { log, dir, syncs };
  }

  it('are written at once, and made durable after lazySyncDelayMs when nothing else syncs', async () => {
    const { log, dir, syncs } = await openCounting();
    const started = performance.now();
    const durable = log.append([rec(1)], { lazy: true });
    await nextTurn();
    expect(syncs).toEqual([]);
    expect([...openLogReader(dir).read()].map((r) => r.lsn)).toEqual([1]);
    expect(await durable).toEqual([1]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(lazySyncDelayMs - 1);
    await nextTurn();
    expect(syncs).toEqual([1]);
    await log.close();
  });

  it('onSync hears of an fdatasync only after the appends it made durable have resolved and their callbacks ran (an ack is not held up by metrics)', async () => {
    const { log, syncs } = await openCounting();
    const syncsSeenByCallback = await log.appendOne(rec(1)).then(() => syncs.length);
    expect(syncsSeenByCallback).toBe(0);
    await nextTurn();
    expect(syncs).toEqual([1]);
    await log.close();
  });

  it('onSync is told every so often while appenders never let the event loop turn (each lone sync on the loop)', async () => {
    const dir = freshDir();
    const syncs: number[] = [];
    const log = await SegmentedLog.open({ dir, onSync: (_seconds, records) => void syncs.push(records), syncLanes: { next: () => 'loop', noteLoopSync: () => undefined } });
    let seenInTheLoop = 0;
    // Awaiting each append is microtasks only: with every sync on the loop, no setImmediate runs until the loop ends.
    for (let i = 1; i <= 200; i++) {
      await log.appendOne(rec(i));
      seenInTheLoop = syncs.length;
    }
    expect(seenInTheLoop).toBeGreaterThanOrEqual(128);
    await log.close();
    expect(syncs.reduce((sum, records) => sum + records, 0)).toBe(200);
  });

  it('ride on the fdatasync of the next record somebody waits on', async () => {
    await withoutTimeouts(async () => {
      const { log, dir, syncs } = await openCounting();
      const lazy = log.append([rec(1)], { lazy: true });
      for (let i = 0; i < 5; i++) await null; // the write runs in a microtask
      expect([...openLogReader(dir).read()].map((r) => r.lsn)).toEqual([1]);
      expect(syncs).toEqual([]);
      await log.appendOne(rec(2));
      expect(await lazy).toEqual([1]);
      await nextTurn();
      expect(syncs).toEqual([2]);
      await log.close();
    });
  });

  it('are made durable at once by sync()', async () => {
    await withoutTimeouts(async () => {
      const { log, syncs } = await openCounting();
      const lazy = log.append([rec(1), rec(2)], { lazy: true });
      await log.sync();
      expect(await lazy).toEqual([1, 2]);
      await nextTurn();
      expect(syncs).toEqual([2]);
      await log.close();
    });
  });

  it('do not hold up close or a roll', async () => {
    await withoutTimeouts(async () => {
      const { log, dir, syncs } = await openCounting({ segmentBytesMax: 256 });
      const lazy: Promise<number[]>[] = [];
      // Once the first segment is full, the next append needs a roll: it goes ahead without the lazy timer.
      for (let i = 1; log.segments().length < 2 && i <= 10_000; i++) {
        lazy.push(log.append([{ kind: 1, timestamp: i, body: { i, pad: 'x'.repeat(40) } }], { lazy: true }));
        await nextTurn();
      }
      expect(log.segments().length).toBe(2);
      const count = lazy.length;
      await log.close();
      expect((await Promise.all(lazy)).flat()).toEqual(Array.from({ length: count }, (_, i) => i + 1));
      expect(syncs.reduce((a, b) => a + b, 0)).toBe(count);
      const reopened = await SegmentedLog.open({ dir });
      expect([...reopened.read()].map((r) => r.lsn)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
      await reopened.close();
    });
  });
});

describe('reading while retention runs', () => {
  it('a read that reaches a segment removed since it started fails with ESEGMENTGONE', async () => {
    const log = await SegmentedLog.open({ dir: freshDir(), segmentBytesMax: 256, retentionBytes: 0 });
    for (let i = 1; i <= 12; i++) await log.appendOne({ kind: 1, timestamp: i, body: { i, pad: 'x'.repeat(80) } });
    const reading = log.read();
    expect(reading.next().value).toMatchObject({ lsn: 1 });
    // Retention keeps every LSN from the newest snapshot before the window restorable: give it one early on.
    await log.writeSnapshot(4, new Uint8Array());
    await log.writeSnapshot(12, new Uint8Array());
    const { removed } = await log.applyRetention();
    expect(removed.length).toBeGreaterThan(1);
    expect(() => [...reading]).toThrow(expect.objectContaining({ code: 'ESEGMENTGONE' }));
    expect([...log.read()].map((r) => r.lsn)[0]).toBe(log.firstLsn);
    await log.close();
  });
});

describe('reads side by side', () => {
  // Checksums are verified on a copy of each reader's chunk in WebAssembly memory (checksum.ts): two reads
  // taking turns must each see their own bytes, and damage deep inside a copied window must still be caught.
  it('two reads interleaved record by record each return the whole log, and a flipped byte is still caught', async () => {
    const dir = freshDir();
    const log = await SegmentedLog.open({ dir });
    const records = Array.from({ length: 3000 }, (_, i): AppendRecord => ({ kind: 1 + (i % 3), timestamp: i, body: { i, p: new Uint8Array(50).fill(i & 0xff) } }));
    await log.append(records);
    const expected = [...log.read()].map((r) => r.body);
    expect(expected).toHaveLength(3000);
    const first = log.read();
    const second = log.read({ lsn: 1500 });
    const fromFirst: unknown[] = [];
    const fromSecond: unknown[] = [];
    for (;;) {
      const a = first.next();
      const b = second.next();
      if (!a.done) fromFirst.push(a.value.body);
      if (!b.done) fromSecond.push(b.value.body);
      if (a.done && b.done) break;
    }
    expect(fromFirst).toEqual(expected);
    expect(fromSecond).toEqual(expected.slice(1499));
    const file = join(dir, log.segments()[0]!.file);
    const frameBytes = log.segments()[0]!.bytes;
    await log.close();
    const bytes = fs.readFileSync(file);
    // The middle of the frames (the file goes on with zero-filled space).
    const middle = Math.floor(frameBytes / 2);
    bytes[middle] = bytes[middle]! ^ 0x01;
    fs.writeFileSync(file, bytes);
    const reader = openLogReader(dir);
    expect(() => [...reader.read()]).toThrow(/corrupt record in segment 0+\d+\.seg at LSN 1[45]\d\d/);
  });
});

/** An array nested `depth` deep around 1: deeper than the fast decoder goes (body-decoder.ts nestingMax). */
const nested = (depth: number): unknown => (depth === 0 ? 1 : [nested(depth - 1)]);

describe('bodies the fast decoder leaves to @msgpack/msgpack', () => {
  it('come back equal: non-ASCII strings, lone surrogates, dates, numeric map keys', async () => {
    const log = await SegmentedLog.open({ dir: freshDir() });
    const bodies = [{ t: 'capteur/température', p: new Uint8Array([1, 2]) }, { s: 'a\ud800b' }, { at: new Date(1_700_000_000_123) }, new Map([[1, 'one']]), { deep: nested(40) }];
    await log.append(bodies.map((body, i) => ({ kind: 1, timestamp: i, body })));
    const expected = bodies.map((body) => decode(encode(body)));
    expect([...log.read()].map((r) => r.body)).toEqual(expected);
    await log.close();
  });
});

describe('frame layout', () => {
  it('matches the documented layout byte for byte', () => {
    const frame = encodeFrame(0x1_0000_0002, { kind: 7, timestamp: 1000.5, body: null });
    expect(frame.length).toBe(30);
    expect(frame.readUInt32LE(8)).toBe(30);
    expect(frame.readUInt32LE(12)).toBe(2);
    expect(frame.readUInt32LE(16)).toBe(1);
    expect(frame.readDoubleLE(20)).toBe(1000.5);
    expect(frame[28]).toBe(7);
    expect(frame[29]).toBe(0xc0); // MessagePack nil
  });
});

describe('offline reader', () => {
  it('reports a corrupt record and a torn tail, and never writes', async () => {
    const dir = freshDir();
    const log = await SegmentedLog.open({ dir, segmentBytesMax: 256 });
    for (let i = 1; i <= 12; i++) await log.appendOne({ kind: 1, timestamp: i, body: { i, pad: 'x'.repeat(80) } });
    const segments = log.segments();
    await log.close();
    const middle = join(dir, segments[1]!.file);
    const bytes = fs.readFileSync(middle);
    bytes[40] = bytes[40]! ^ 0xff;
    fs.writeFileSync(middle, bytes);
    const last = join(dir, segments[segments.length - 1]!.file);
    fs.truncateSync(last, segments[segments.length - 1]!.bytes - 5);
    const sizesBefore = fs.readdirSync(dir).map((f) => [f, fs.statSync(join(dir, f)).size]);

    const reader = openLogReader(dir);
    expect(reader.tornTail).toMatchObject({ segment: segments[segments.length - 1]!.file, lsn: 12 });
    const report = reader.verify();
    expect(report.ok).toBe(false);
    expect(report.badRecords).toHaveLength(1);
    expect(report.badRecords[0]).toMatchObject({ segment: segments[1]!.file, lsn: segments[1]!.firstLsn, offset: 32 });
    expect(report.records).toBe(10);
    expect(() => [...reader.read()]).toThrow(/corrupt record in segment 0+\d+\.seg at LSN \d+/);
    expect([...reader.read({ lsn: segments[2]!.firstLsn })].map((r) => r.lsn).at(-1)).toBe(11);
    expect(fs.readdirSync(dir).map((f) => [f, fs.statSync(join(dir, f)).size])).toEqual(sizesBefore);
  });
});
