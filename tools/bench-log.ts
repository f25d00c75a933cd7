/**
 * Log append benchmark: records/s and latency (p50/p99) with 1, 8 and 64
 * concurrent appenders (each a closed loop: append, await, repeat), for
 * records with 100-byte and 4 KiB payloads, compared in the same run with the
 * raw rate of a plain `write + fdatasync` loop on the same disk (same
 * directory) writing frames of the same size, each row with the process's CPU
 * time per record (every thread: what a record costs beside the disk's wait)
 * and the event loop's share of it (its thread's CPU time, from Linux's
 * schedstat: with 64 closed-loop appenders the loop's work between two
 * fdatasyncs is the part of the cycle that is not the disk).
 *
 * The raw loop and the 1-, 8- and 64-appender cases alternate in short
 * slices, so a noisy neighbour on a shared machine (this one's fdatasync swings
 * between ~0.15 and ~0.9 ms from minute to minute) weighs on all of them alike
 * and their ratios stay meaningful.
 * The pipelining rows compare it on and off, with appenders in lockstep and
 * with jittered appenders; they are how its default (on) was chosen. Then
 * comes the replay rate of read() (checksums verified, bodies decoded), and
 * last the rate of readRecord(lsn) at random live LSNs (1 KiB records, files
 * in the page cache: one pread, checksum and decode per record).
 * Data lives in a temp dir (CAIRN_BENCH_DIR picks the disk), removed afterwards.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SegmentedLog, type AppendRecord } from '../src/log/index.js';
import { encodeFrame } from '../src/log/record.js';
import { threadTimes } from './bench-thread-times.js';

const caseMs = 2000;
const warmUpMs = 200;
const sliceMs = 250;
const samplesMax = 1 << 21;
const payloadSizes = [100, 4096] as const;
const targets = { loneVersusRaw: 0.9, sixtyFourVersusLone: 50 };

const writeAsync = promisify(fs.write);
const fdatasyncAsync = promisify(fs.fdatasync);

/** Latencies of one case, in ms; percentiles by sorting a copy once. */
class Latencies {
  private readonly values = new Float64Array(samplesMax);
  private count = 0;

  add(ms: number): void {
    if (this.count < samplesMax) this.values[this.count++] = ms;
  }

  percentileMicros(p: number): number {
    const sorted = this.values.slice(0, this.count).sort();
    return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 1000;
  }
}

interface Tally {
  records: number;
  ms: number;
  /** Event-loop busy time during the measured slices (appender cases). */
  busyMs: number;
  /** The process's CPU time (user + system, every thread: the fdatasyncs' pool thread too) during the measured slices. */
  cpuMs: number;
  /** The event loop thread's CPU time during the measured slices (NaN without /proc). */
  loopCpuMs: number;
  /** The fdatasyncs of the measured slices, in ms (appender cases). */
  readonly syncs: number[];
  readonly latencies: Latencies;
  readonly frameBytes: number;
}

const newTally = (frameBytes: number): Tally => ({ records: 0, ms: 0, busyMs: 0, cpuMs: 0, loopCpuMs: 0, syncs: [], latencies: new Latencies(), frameBytes });
const perSecond = (t: Tally): number => (t.records / t.ms) * 1000;

function recordOf(payloadBytes: number): AppendRecord {
  return { kind: 1, timestamp: Date.now(), body: new Uint8Array(payloadBytes).fill(0x5a) };
}

/** The plain loop the log is measured against: one write and one fdatasync per frame, nothing else. */
async function rawSlice(fd: number, position: { bytes: number }, frame: Buffer, ms: number, tally: Tally | undefined): Promise<void> {
  const started = performance.now();
  const cpuAtStart = process.cpuUsage();
  const loopAtStart = loopCpuMs();
  const end = started + ms;
  while (performance.now() < end) {
    const t = performance.now();
    await writeAsync(fd, frame, 0, frame.length, position.bytes);
    position.bytes += frame.length;
    await fdatasyncAsync(fd);
    if (tally !== undefined) {
      tally.latencies.add(performance.now() - t);
      tally.records += 1;
    }
  }
  if (tally !== undefined) {
    tally.ms += performance.now() - started;
    tally.cpuMs += cpuMsSince(cpuAtStart);
    tally.loopCpuMs += loopCpuMs() - loopAtStart;
  }
}

/** This process's event loop thread's CPU time so far, in ms; NaN without /proc. */
function loopCpuMs(): number {
  return (threadTimes(process.pid)?.loopRunNs ?? Number.NaN) / 1e6;
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Which tally a log's fdatasyncs count for, while a measured slice runs. */
const syncTally = new Map<SegmentedLog, Tally>();

function openLog(dir: string, options: { pipeline?: boolean } = {}): Promise<SegmentedLog> {
  const opened: { log?: SegmentedLog } = {};
  const onSync = (seconds: number): void => void (opened.log && syncTally.get(opened.log)?.syncs.push(seconds * 1000));
  return SegmentedLog.open({ dir, onSync, ...options }).then((log) => (opened.log = log));
}

/**
 * `appenders` closed loops appending `record` for `ms`. With `jitter`, each
 * appender waits 0–3 event-loop turns after each ack, as producers fed by
 * sockets do, so they stop moving in lockstep.
 */
async function appendSlice(log: SegmentedLog, appenders: number, record: AppendRecord, ms: number, tally: Tally | undefined, jitter = false): Promise<void> {
  const started = performance.now();
  const loopAtStart = performance.eventLoopUtilization();
  const cpuAtStart = process.cpuUsage();
  const loopCpuAtStart = loopCpuMs();
  if (tally !== undefined) syncTally.set(log, tally);
  const end = started + ms;
  // One clock reading per record: the ack's time is the next append's start and the end test (the row is the log's cost, not the loop's).
  const loop = async (): Promise<void> => {
    let now = performance.now();
    while (now < end) {
      await log.appendOne({ kind: record.kind, timestamp: Date.now(), body: record.body });
      const acked = performance.now();
      if (tally !== undefined) {
        tally.latencies.add(acked - now);
        tally.records += 1;
      }
      now = acked;
      if (jitter) {
        for (let turns = Math.floor(Math.random() * 4); turns > 0; turns--) await nextTurn();
        now = performance.now();
      }
    }
  };
  await Promise.all(Array.from({ length: appenders }, loop));
  syncTally.delete(log);
  if (tally !== undefined) {
    tally.ms += performance.now() - started;
    tally.busyMs += performance.eventLoopUtilization(loopAtStart).active;
    tally.cpuMs += cpuMsSince(cpuAtStart);
    tally.loopCpuMs += loopCpuMs() - loopCpuAtStart;
  }
}

/** One side of a comparison: runs for `ms`, adding to `tally` when given (warm-up otherwise). */
type Contestant = (ms: number, tally: Tally | undefined) => Promise<void>;

/**
 * Runs contestants in alternating slices (the order flipping every round), so
 * that whatever else the machine is doing weighs on each about equally.
 */
async function interleaved(contestants: readonly Contestant[], tallies: readonly Tally[]): Promise<void> {
  for (const run of contestants) await run(warmUpMs, undefined);
  for (let round = 0; round * sliceMs < caseMs; round++) {
    const order = round % 2 === 0 ? contestants.map((_, i) => i) : contestants.map((_, i) => contestants.length - 1 - i);
    for (const i of order) await contestants[i]!(sliceMs, tallies[i]);
  }
}

/** The raw loop and the log with 1, 8 and 64 appenders (one log each), interleaved. */
async function rawAndAppenders(dir: string, payloadBytes: number): Promise<{ raw: Tally; lone: Tally; eight: Tally; sixtyFour: Tally }> {
  const record = recordOf(payloadBytes);
  const frame = encodeFrame(1, record);
  const [raw, lone, eight, sixtyFour] = [0, 1, 2, 3].map(() => newTally(frame.length)) as [Tally, Tally, Tally, Tally];
  const fd = fs.openSync(join(dir, `raw-${payloadBytes}.bin`), 'w');
  const logs = await Promise.all([1, 8, 64].map((appenders) => openLog(join(dir, `a${appenders}-${payloadBytes}`))));
  try {
    const position = { bytes: 0 };
    const appending = (log: SegmentedLog, appenders: number): Contestant => (ms, t) => appendSlice(log, appenders, record, ms, t);
    await interleaved([(ms, t) => rawSlice(fd, position, frame, ms, t), appending(logs[0]!, 1), appending(logs[1]!, 8), appending(logs[2]!, 64)], [raw, lone, eight, sixtyFour]);
  } finally {
    fs.closeSync(fd);
    for (const log of logs) await log.close();
  }
  return { raw, lone, eight, sixtyFour };
}

/** Concurrent appenders on one log per option set, interleaved when there are several. */
async function concurrent(dir: string, payloadBytes: number, appenders: number, pipelines: readonly boolean[], jitter = false): Promise<Tally[]> {
  const record = recordOf(payloadBytes);
  const frameBytes = encodeFrame(1, record).length;
  const logs = await Promise.all(pipelines.map((pipeline) => openLog(join(dir, `c${appenders}-${payloadBytes}-${pipeline ? 'p' : 'np'}${jitter ? '-j' : ''}`), { pipeline })));
  const tallies = logs.map(() => newTally(frameBytes));
  try {
    await interleaved(
      logs.map((log) => (ms: number, t: Tally | undefined) => appendSlice(log, appenders, record, ms, t, jitter)),
      tallies,
    );
  } finally {
    for (const log of logs) await log.close();
  }
  return tallies;
}

function row(label: string, tally: Tally, comparison = ''): string {
  const rate = perSecond(tally);
  const megabytes = (rate * tally.frameBytes) / 1e6;
  const cells = [
    label.padEnd(44),
    Math.round(rate).toLocaleString('en').padStart(10),
    megabytes.toFixed(1).padStart(8),
    tally.latencies.percentileMicros(50).toFixed(0).padStart(8),
    tally.latencies.percentileMicros(99).toFixed(0).padStart(8),
    (tally.records === 0 ? Number.NaN : (tally.cpuMs * 1000) / tally.records).toFixed(2).padStart(10),
    (tally.records === 0 ? Number.NaN : (tally.loopCpuMs * 1000) / tally.records).toFixed(2).padStart(10),
  ];
  return `${cells.join(' ')}   ${comparison}`;
}

const ratio = (a: Tally, b: Tally): number => perSecond(a) / perSecond(b);
const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');

async function benchPayload(dir: string, payloadBytes: number, summary: string[]): Promise<void> {
  const size = payloadBytes >= 1024 ? `${payloadBytes / 1024} KiB` : `${payloadBytes} B`;
  const { raw, lone, eight, sixtyFour } = await rawAndAppenders(dir, payloadBytes);
  console.log(row(`raw write+fdatasync, ${raw.frameBytes} B frames`, raw));
  console.log(row(`log, 1 appender, ${size} payload`, lone, `${ratio(lone, raw).toFixed(2)} × raw`));
  console.log(row(`log, 8 appenders, ${size} payload`, eight, `${ratio(eight, lone).toFixed(1)} × lone, ${ratio(eight, raw).toFixed(1)} × raw`));
  console.log(row(`log, 64 appenders, ${size} payload`, sixtyFour, `${ratio(sixtyFour, lone).toFixed(1)} × lone, ${ratio(sixtyFour, raw).toFixed(1)} × raw`));
  summary.push(`lone appender ${size}: ${ratio(lone, raw).toFixed(2)} × raw (target ≥ ${targets.loneVersusRaw}: ${verdict(ratio(lone, raw) >= targets.loneVersusRaw)})`);
  if (payloadBytes === 100) {
    // What bounds the 64-appender ratio: per fdatasync, the event loop's busy time against the sync itself.
    for (const [label, t] of [['1 appender', lone], ['64 appenders', sixtyFour]] as const) {
      const syncs = [...t.syncs].sort((a, b) => a - b);
      const busyMicros = (t.busyMs / Math.max(1, syncs.length)) * 1000;
      const loopCpuMicros = (t.loopCpuMs / Math.max(1, syncs.length)) * 1000;
      const syncMicros = (syncs[Math.floor(syncs.length / 2)] ?? Number.NaN) * 1000;
      console.log(`  ${label}: ${(t.records / Math.max(1, syncs.length)).toFixed(1)} records per fdatasync; per fdatasync ${busyMicros.toFixed(0)} µs of event-loop work (${loopCpuMicros.toFixed(0)} µs of its thread's CPU), fdatasync p50 ${syncMicros.toFixed(0)} µs`);
    }
    summary.push(`64 appenders ${size}: ${ratio(sixtyFour, lone).toFixed(1)} × lone (target ≥ ${targets.sixtyFourVersusLone}: ${verdict(ratio(sixtyFour, lone) >= targets.sixtyFourVersusLone)})`);
  }
}

/** Pipelining on and off, with appenders in lockstep and with jittered ones (where batches overlap). */
async function benchPipelining(dir: string): Promise<void> {
  for (const jitter of [false, true]) {
    for (const appenders of [8, 64]) {
      const [on, off] = (await concurrent(dir, 100, appenders, [true, false], jitter)) as [Tally, Tally];
      const label = `${appenders} ${jitter ? 'jittered' : 'lockstep'} appenders, 100 B`;
      console.log(row(`pipelining on, ${label}`, on));
      console.log(row(`pipelining off, ${label}`, off, `on/off ${ratio(on, off).toFixed(2)}`));
    }
  }
}

const replayRecords = 500_000;

/** Replay speed: read() with verify and full decode, over a log of small records written in big batches. */
async function benchRead(dir: string): Promise<void> {
  const log = await SegmentedLog.open({ dir: join(dir, 'read') });
  try {
    const batch = Array.from({ length: 5000 }, (_, i): AppendRecord => ({ kind: 3, timestamp: Date.now(), body: { queue: 'orders', seq: i, payload: new Uint8Array(100) } }));
    for (let written = 0; written < replayRecords; written += batch.length) await log.append(batch);
    let bytes = 0;
    let records = 0;
    const started = performance.now();
    for (const record of log.read()) {
      records += 1;
      bytes += record.size;
    }
    const seconds = (performance.now() - started) / 1000;
    console.log(`read() from LSN 1, verify + decode: ${records.toLocaleString('en')} records (${(bytes / 1e6).toFixed(0)} MB) in ${seconds.toFixed(2)} s = ${Math.round(records / seconds).toLocaleString('en')} records/s, ${(bytes / 1e6 / seconds).toFixed(0)} MB/s`);
  } finally {
    await log.close();
  }
}

const readRecordCount = 100_000;
const readRecordPayloadBytes = 1024;

/**
 * readRecord at uniformly random LSNs of a log just written (so in the page cache), after a warm-up
 * pass, in slices alternating with the bare syscall: a pread of as many bytes at random offsets of the
 * same segment file (what no reader by LSN can beat).
 */
async function benchReadRecord(dir: string): Promise<void> {
  const log = await SegmentedLog.open({ dir: join(dir, 'read-record') });
  try {
    const batch = Array.from({ length: 1000 }, (_, i): AppendRecord => ({ kind: 3, timestamp: Date.now(), body: { queue: 'orders', seq: i, payload: new Uint8Array(readRecordPayloadBytes).fill(i & 0xff) } }));
    for (let written = 0; written < readRecordCount; written += batch.length) await log.append(batch);
    // Drawn beforehand, so the loops measure reads, not the random number generator.
    const lsns = Uint32Array.from({ length: 1 << 20 }, () => 1 + Math.floor(Math.random() * readRecordCount));
    let frameBytes = 0;
    for (let lsn = 1; lsn <= readRecordCount; lsn++) frameBytes = log.readRecord(lsn).size;
    const first = log.segments()[0]!;
    const fd = fs.openSync(join(dir, 'read-record', first.file), 'r');
    const buffer = Buffer.allocUnsafe(frameBytes);
    const framesInFirst = Math.floor((first.bytes - 32) / frameBytes);
    const [byLsn, raw] = [newTally(frameBytes), newTally(frameBytes)];
    let next = 0;
    const readSlice = (read: (lsn: number) => void): Contestant => (ms, tally) => {
      const started = performance.now();
      let reads = 0;
      while (performance.now() < started + ms) {
        for (let i = 0; i < 1000; i++) read(lsns[next++ & (lsns.length - 1)]!);
        reads += 1000;
      }
      if (tally !== undefined) {
        tally.records += reads;
        tally.ms += performance.now() - started;
      }
      return Promise.resolve();
    };
    try {
      await interleaved([
        readSlice((lsn) => void log.readRecord(lsn)),
        readSlice((lsn) => void fs.readSync(fd, buffer, 0, frameBytes, 32 + (lsn % framesInFirst) * frameBytes)),
      ], [byLsn, raw]);
    } finally {
      fs.closeSync(fd);
    }
    const micros = (t: Tally): string => `${(1000 / perSecond(t) * 1000).toFixed(2)} µs`;
    console.log(`readRecord(lsn) at random LSNs of ${readRecordCount.toLocaleString('en')} records of ${readRecordPayloadBytes} B payload, ${log.segments().length} segment(s), page cache: `
      + `${Math.round(perSecond(byLsn)).toLocaleString('en')} records/s, ${micros(byLsn)} per record; a bare ${frameBytes} B pread: ${micros(raw)}`);
  } finally {
    await log.close();
  }
}

export async function benchLog(): Promise<void> {
  const dir = fs.mkdtempSync(join(process.env['CAIRN_BENCH_DIR'] ?? os.tmpdir(), 'cairn-bench-log-'));
  const [load1] = os.loadavg();
  console.log(`log append: ${caseMs / 1000} s per case, data in ${dir}; node ${process.version}, ${os.cpus().length} CPUs, load average ${load1?.toFixed(2)}`);
  console.log(`${'case'.padEnd(44)} ${'records/s'.padStart(10)} ${'MB/s'.padStart(8)} ${'p50 µs'.padStart(8)} ${'p99 µs'.padStart(8)} ${'CPU µs/rec'.padStart(10)} ${'loop µs/rec'.padStart(10)}`);
  const summary: string[] = [];
  try {
    for (const payloadBytes of payloadSizes) await benchPayload(dir, payloadBytes, summary);
    await benchPipelining(dir);
    await benchRead(dir);
    await benchReadRecord(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  for (const line of summary) console.log(line);
}
