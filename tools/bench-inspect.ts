/**
 * Inspector benchmark: builds a 1,000,000-record log (appended in batches of
 * 10,000: a realistic mix of msg, deliver and ack records, one snapshot-free
 * history) and times `inspect records --kind msg` to a null stream and
 * `inspect state --at <middle LSN>`. Prints the figures; tools/bench.ts calls
 * benchInspect().
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { runInspect } from '../src/inspect/index.js';
import { SegmentedLog, type AppendRecord } from '../src/log/index.js';
import { RecordKind } from '../src/projections/records.js';

const recordCount = 1_000_000;
const batchRecords = 10_000;

function nullStream(): Writable {
  return new Writable({ write(_chunk, _encoding, done) { done(); } });
}

/** Session `c0` and queue `q0` exist; then msg → deliver → ack (session) → ack (queue), so pending stays small. */
function recordAt(i: number, start: number): AppendRecord {
  const timestamp = start + i;
  if (i === 0) return { kind: RecordKind.session, timestamp, body: { c: 'c0', op: 'open' } };
  if (i === 1) return { kind: RecordKind.queue, timestamp, body: { n: 'q0', op: 'declare' } };
  const n = i - 2;
  const seq = Math.floor(n / 4) + 1;
  switch (n % 4) {
    case 0: return { kind: RecordKind.msg, timestamp, body: { t: `sensors/${seq % 100}`, p: new Uint8Array(64).fill(seq & 0xff), qos: 1, s: [['c0', seq, 1]], u: [['q0', seq]], from: 'pub' } };
    case 1: return { kind: RecordKind.deliver, timestamp, body: { c: 'c0', s: [seq] } };
    case 2: return { kind: RecordKind.ack, timestamp, body: { c: 'c0', s: [seq] } };
    default: return { kind: RecordKind.ack, timestamp, body: { q: 'q0', s: [seq] } };
  }
}

export async function benchInspect(): Promise<void> {
  const dir = fs.mkdtempSync(join(os.tmpdir(), 'cairn-bench-inspect-'));
  try {
    const start = Date.UTC(2024, 0, 1);
    let t0 = performance.now();
    const log = await SegmentedLog.open({ dir });
    for (let i = 0; i < recordCount; i += batchRecords) {
      const batch: AppendRecord[] = [];
      for (let j = i; j < Math.min(recordCount, i + batchRecords); j++) batch.push(recordAt(j, start));
      await log.append(batch);
    }
    await log.close();
    const bytes = fs.readdirSync(dir).reduce((sum, f) => sum + fs.statSync(join(dir, f)).size, 0);
    console.log(`inspect bench: built ${recordCount} records (${(bytes / 1e6).toFixed(0)} MB) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const io = { stdout: nullStream(), stderr: nullStream(), isTTY: false };
    t0 = performance.now();
    const code1 = await runInspect(['records', '--data', dir, '--kind', 'msg'], io);
    const recordsMs = performance.now() - t0;
    console.log(`inspect records --kind msg: ${(recordsMs / 1000).toFixed(2)} s (${Math.round(recordCount / (recordsMs / 1000)).toLocaleString('en')} records scanned/s, exit ${code1})`);
    t0 = performance.now();
    const middle = recordCount / 2;
    const code2 = await runInspect(['state', '--data', dir, '--at', String(middle), '--json'], io);
    const stateMs = performance.now() - t0;
    console.log(`inspect state --at ${middle}: ${(stateMs / 1000).toFixed(2)} s (${Math.round(middle / (stateMs / 1000)).toLocaleString('en')} records replayed/s, exit ${code2})`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchInspect();
