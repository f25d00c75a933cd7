/**
 * The log contract: what every implementation of the broker's log must do
 * (the BrokerLog interface of src/core/broker.ts: append, sync, read forward,
 * read one record by LSN, snapshots, failure), as one vitest suite that each
 * implementation runs from its own test file, as aedes' persistence back-ends
 * run one abstract suite:
 *
 *   describe('the file log', () => logContract(fileLogFactory));
 *
 * Run against the file log (SegmentedLog: file-log.test.ts), the in-memory
 * log (MemoryLog: memory-log.test.ts) and the NATS JetStream log
 * (JetStreamLog: jetstream-log.test.ts, on a three-node cluster). A factory
 * is small on purpose:
 *
 *   capabilities   what applies to the implementation (see LogCapabilities);
 *                  the tests that need one are not registered where it is off
 *   create(opts)   a fresh, empty log in storage of its own. `segmentBytesMax`
 *                  is honoured where segments apply (tiny: rolls every few
 *                  records) and may be ignored elsewhere. Where retention
 *                  applies, the log keeps nothing the newest snapshot does not
 *                  need (the file log: retentionBytes 0)
 *   handle.log     the log as open now (a new object after reopen)
 *   reopen()       close (waiting for appends in flight) and open the same
 *                  storage again, as a restart would
 *   failNextSync() from now on, the next step that makes records durable
 *                  fails (the file log: an fdatasync fails with EIO); may
 *                  reopen the log to arm it
 *   tearTail()     (tornTails) close, and cut the last record short in
 *                  storage, as a crash in the middle of its write would
 *   segmentCount() (segments) how many segments hold the records now
 *   destroy()      close and remove the storage
 */
import { encode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { announceSeed, testSeed } from '../support/kit.js';

export interface ContractAppendRecord {
  readonly kind: number;
  readonly timestamp: number;
  readonly body: unknown;
}

export interface ContractRecord extends ContractAppendRecord {
  readonly lsn: number;
}

/** The log interface under contract: what the broker core uses (core/broker.ts BrokerLog), record types left open. */
export interface ContractLog {
  readonly nextLsn: number;
  readonly failed: Error | undefined;
  append(records: readonly ContractAppendRecord[], options?: { lazy?: boolean }): Promise<number[]>;
  sync(): Promise<void>;
  read(from?: { lsn?: number }): Iterable<ContractRecord>;
  /** Any LSN from the first retained one to nextLsn - 1, durable or not; otherwise an error with code 'ENORECORD'. */
  readRecord(lsn: number): ContractRecord;
  writeSnapshot(lsn: number, data: Uint8Array): Promise<void>;
  loadSnapshot(): { lsn: number; data: Uint8Array } | undefined;
  /** Where retention applies: the oldest LSN still held, and the call that retires what the newest snapshot no longer needs. */
  readonly firstLsn?: number;
  applyRetention?(): Promise<unknown>;
}

export interface LogCapabilities {
  /** Records go into segments of at most about segmentBytesMax bytes; segmentCount() tells how many. */
  readonly segments: boolean;
  /** A record cut short at the end of storage (tearTail) is dropped on reopen, and its LSN is given again. */
  readonly tornTails: boolean;
  /** applyRetention() retires records the newest snapshot covers; firstLsn moves past them. */
  readonly retention: boolean;
}

export interface LogHandle {
  readonly log: ContractLog;
  reopen(): Promise<ContractLog>;
  failNextSync(): Promise<void>;
  tearTail?(): Promise<void>;
  segmentCount?(): number;
  destroy(): Promise<void>;
}

export interface LogFactory {
  readonly capabilities: LogCapabilities;
  create(options?: { segmentBytesMax?: number }): Promise<LogHandle>;
}

/** Small enough that a few records fill a segment (the file log's minimum is 256). */
const tinySegmentBytes = 512;

const recordNumbered = (n: number, payloadBytes = 16): ContractAppendRecord => ({
  kind: 1 + (n % 250),
  timestamp: 1_700_000_000_000 + n,
  body: { n, payload: new Uint8Array(payloadBytes).fill(n & 0xff) },
});

/** The record as appended, with its LSN: what read and readRecord must give back. */
const expected = (lsn: number, record: ContractAppendRecord): ContractRecord => ({ lsn, kind: record.kind, timestamp: record.timestamp, body: record.body });

/**
 * Same LSN, kind, timestamp, and a body equal to the one appended, compared by its MessagePack bytes:
 * byte for byte for binary values, and fast (a deep equality walks a 200 KB array element by element).
 */
function expectRecord(actual: ContractRecord, want: ContractRecord): void {
  expect({ lsn: actual.lsn, kind: actual.kind, timestamp: actual.timestamp }).toEqual({ lsn: want.lsn, kind: want.kind, timestamp: want.timestamp });
  const [got, wanted] = [Buffer.from(encode(actual.body)), Buffer.from(encode(want.body))];
  if (!got.equals(wanted)) expect.fail(`LSN ${want.lsn}: the body read back (${got.length} bytes of MessagePack) differs from the one appended (${wanted.length})`);
}

function expectEveryRecord(log: ContractLog, appended: readonly ContractRecord[]): void {
  for (const want of appended) expectRecord(log.readRecord(want.lsn), want);
}

async function withLog(factory: LogFactory, options: { segmentBytesMax?: number }, body: (handle: LogHandle) => Promise<void>): Promise<void> {
  const handle = await factory.create(options);
  try {
    await body(handle);
  } finally {
    await handle.destroy();
  }
}

/** Registers the contract's tests for one implementation. */
export function logContract(factory: LogFactory): void {
  const { capabilities } = factory;
  const run = (options: { segmentBytesMax?: number }, body: (handle: LogHandle) => Promise<void>) => () => withLog(factory, options, body);

  describe('appending', () => {
    it('assigns consecutive LSNs from 1 in call order, synchronously, across calls in one tick', run({}, async ({ log }) => {
      expect(log.nextLsn).toBe(1);
      const first = log.append([recordNumbered(1), recordNumbered(2)]);
      expect(log.nextLsn).toBe(3);
      const second = log.append([recordNumbered(3)]);
      const third = log.append([recordNumbered(4), recordNumbered(5), recordNumbered(6)]);
      expect(log.nextLsn).toBe(7);
      expect(await Promise.all([first, second, third])).toEqual([[1, 2], [3], [4, 5, 6]]);
    }));

    it('resolves the durability promise with the LSNs, and sync() resolves, lazy records included', run({}, async ({ log }) => {
      await expect(log.append([recordNumbered(1)])).resolves.toEqual([1]);
      const lazy = log.append([recordNumbered(2)], { lazy: true });
      await log.sync();
      await expect(lazy).resolves.toEqual([2]);
      await expect(log.sync()).resolves.toBeUndefined();
    }));
  });

  describe('reading forward', () => {
    it('read({lsn}) from any LSN gives exactly the records from there on, in order', run({ segmentBytesMax: tinySegmentBytes }, async ({ log }) => {
      const appended: ContractRecord[] = [];
      for (let n = 1; n <= 12; n++) {
        const [lsn] = await log.append([recordNumbered(n, 40)]);
        appended.push(expected(lsn!, recordNumbered(n, 40)));
      }
      for (let from = 1; from <= appended.length + 1; from++) {
        const read = [...log.read({ lsn: from })];
        expect(read.map((r) => r.lsn)).toEqual(appended.slice(from - 1).map((r) => r.lsn));
        read.forEach((r, i) => expectRecord(r, appended[from - 1 + i]!));
      }
    }));
  });

  describe('reading one record by LSN', () => {
    it('serves every appended LSN before its write completes, after it, and after reopen', run({}, async (handle) => {
      const { log } = handle;
      const appended: ContractRecord[] = [];
      const promises: Promise<number[]>[] = [];
      // Some records in the batch being written (a big one is written asynchronously), some pending behind it.
      for (let n = 1; n <= 30; n++) {
        const record = recordNumbered(n, n % 10 === 0 ? 40_000 : 20);
        appended.push(expected(log.nextLsn, record));
        promises.push(log.append([record]));
        expectEveryRecord(log, appended);
        if (n % 7 === 0) await Promise.resolve();
      }
      await Promise.all(promises);
      expectEveryRecord(log, appended);
      const reopened = await handle.reopen();
      expect(reopened.nextLsn).toBe(appended.length + 1);
      expectEveryRecord(reopened, appended);
    }));

    it('serves every LSN across segment rolls, before and after reopen', run({ segmentBytesMax: tinySegmentBytes }, async (handle) => {
      const appended: ContractRecord[] = [];
      for (let n = 1; n <= 40; n++) {
        const record = recordNumbered(n, 10 + ((n * 37) % 150));
        const pending = handle.log.append([record]);
        appended.push(expected((await pending)[0]!, record));
      }
      if (capabilities.segments) expect(handle.segmentCount!()).toBeGreaterThan(5);
      expectEveryRecord(handle.log, appended);
      const reopened = await handle.reopen();
      expectEveryRecord(reopened, appended);
      // Reads in any order, jumping between segments.
      for (let i = 0; i < appended.length; i++) {
        const want = appended[(i * 17) % appended.length]!;
        expectRecord(reopened.readRecord(want.lsn), want);
      }
    }));

    it('refuses an LSN not appended yet, naming the readable range', run({}, async ({ log }) => {
      await log.append([recordNumbered(1), recordNumbered(2), recordNumbered(3)]);
      for (const lsn of [4, 5, 1000]) {
        expect(() => log.readRecord(lsn)).toThrow(expect.objectContaining({ code: 'ENORECORD', message: expect.stringContaining('1..3') as unknown }));
      }
      expect(() => log.readRecord(0)).toThrow(expect.objectContaining({ code: 'ENORECORD' }));
    }));

    it('refuses an LSN of an empty log', run({}, async ({ log }) => {
      expect(() => log.readRecord(1)).toThrow(expect.objectContaining({ code: 'ENORECORD' }));
    }));

    // Registered only where it applies: a test that cannot apply is not a skipped test.
    const itWithRetention = capabilities.retention ? it : (): void => undefined;
    itWithRetention('refuses an LSN retention has retired, naming the readable range', run({ segmentBytesMax: tinySegmentBytes }, async ({ log }) => {
      const appended: ContractRecord[] = [];
      for (let n = 1; n <= 30; n++) {
        const [lsn] = await log.append([recordNumbered(n, 60)]);
        appended.push(expected(lsn!, recordNumbered(n, 60)));
      }
      // Retention keeps what the newest snapshot before its window needs: one early on lets it remove something.
      await log.writeSnapshot(10, new Uint8Array([1]));
      await log.writeSnapshot(30, new Uint8Array([2]));
      await log.applyRetention!();
      const firstLsn = log.firstLsn!;
      expect(firstLsn).toBeGreaterThan(1);
      for (const lsn of [1, firstLsn - 1]) {
        expect(() => log.readRecord(lsn)).toThrow(expect.objectContaining({ code: 'ENORECORD', message: expect.stringContaining(`${firstLsn}..30`) as unknown }));
      }
      expectEveryRecord(log, appended.slice(firstLsn - 1));
    }));

    it('every record is returned byte for byte, whatever the sizes (property, before and after reopen)', async () => {
      announceSeed('log contract: readRecord byte for byte');
      // Sizes up to 3 × the file log's initial batch buffer (64 KiB), most of them small.
      const size = fc.oneof({ weight: 4, arbitrary: fc.nat(300) }, { weight: 1, arbitrary: fc.integer({ min: 60_000, max: 200_000 }) });
      const step = fc.record({ sizes: fc.array(size, { minLength: 1, maxLength: 4 }), wait: fc.constantFrom('none' as const, 'microtask' as const, 'durable' as const) });
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), fc.integer({ min: 0, max: 255 }), async (steps, fill) => {
          await withLog(factory, { segmentBytesMax: tinySegmentBytes }, async (handle) => {
            const appended: ContractRecord[] = [];
            const promises: Promise<number[]>[] = [];
            for (const { sizes, wait } of steps) {
              const records = sizes.map((bytes, i) => ({ kind: 9, timestamp: appended.length + i, body: new Uint8Array(bytes).fill((fill + appended.length + i) & 0xff) }));
              const firstLsn = handle.log.nextLsn;
              promises.push(handle.log.append(records));
              records.forEach((record, i) => appended.push(expected(firstLsn + i, record)));
              expectEveryRecord(handle.log, appended);
              if (wait === 'microtask') await Promise.resolve();
              if (wait === 'durable') await promises[promises.length - 1];
            }
            await Promise.all(promises);
            expectEveryRecord(handle.log, appended);
            expectEveryRecord(await handle.reopen(), appended);
          });
        }),
        { seed: testSeed, numRuns: 25 },
      );
    });
  });

  describe('snapshots', () => {
    it('loads the newest snapshot written, before and after reopen', run({}, async (handle) => {
      expect(handle.log.loadSnapshot()).toBeUndefined();
      await handle.log.append([1, 2, 3, 4, 5].map((n) => recordNumbered(n)));
      await handle.log.writeSnapshot(3, new Uint8Array([3, 3, 3]));
      await handle.log.writeSnapshot(5, new Uint8Array([5, 5]));
      const loaded = handle.log.loadSnapshot();
      expect(loaded?.lsn).toBe(5);
      expect(loaded?.data).toEqual(new Uint8Array([5, 5]));
      const reopened = await handle.reopen();
      expect(reopened.loadSnapshot()?.lsn).toBe(5);
      expect(reopened.loadSnapshot()?.data).toEqual(new Uint8Array([5, 5]));
    }));
  });

  describe('failure', () => {
    it('a log whose durability step failed refuses every later append, and still serves what was durable', run({}, async (handle) => {
      await handle.log.append([recordNumbered(1)]);
      await handle.failNextSync();
      const { log } = handle;
      const doomed = await log.append([recordNumbered(2)]).then(() => undefined, (error: unknown) => error);
      expect(doomed).toBeInstanceOf(Error);
      expect(log.failed).toBeInstanceOf(Error);
      await expect(log.append([recordNumbered(3)])).rejects.toBeInstanceOf(Error);
      await expect(log.sync()).rejects.toBeInstanceOf(Error);
      expectRecord(log.readRecord(1), expected(1, recordNumbered(1)));
    }));
  });

  (capabilities.tornTails ? describe : (): void => undefined)('torn tails', () => {
    it('a record cut short at the end is dropped on reopen and its LSN given again; the others are served', run({ segmentBytesMax: tinySegmentBytes }, async (handle) => {
      const records = [1, 2, 3, 4, 5].map((n) => recordNumbered(n, 50));
      await handle.log.append(records);
      await handle.tearTail!();
      const reopened = await handle.reopen();
      expect(reopened.nextLsn).toBe(5);
      expectEveryRecord(reopened, records.slice(0, 4).map((r, i) => expected(i + 1, r)));
      expect(() => reopened.readRecord(5)).toThrow(expect.objectContaining({ code: 'ENORECORD' }));
      await expect(reopened.append([recordNumbered(6)])).resolves.toEqual([5]);
      expectRecord(reopened.readRecord(5), expected(5, recordNumbered(6)));
    }));
  });
}
