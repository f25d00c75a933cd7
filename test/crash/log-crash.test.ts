/**
 * The segmented log under SIGKILL. A child process (fixtures/log-appender.mjs,
 * plain JS on dist/, so run `npx tsc -p tsconfig.json` first; `npm test` does)
 * appends from 32 concurrent appenders with random body sizes, small segments
 * (frequent rolls) and periodic snapshots, printing each LSN and a content
 * hash only after its promise resolved. It is killed at a random moment —
 * sometimes before it finished opening (mid-recovery), usually mid-load. After
 * each kill the parent reopens the log and checks that every acknowledged LSN
 * is there with its exact content, that the newest snapshot is at least as
 * new as the last acknowledged one, and that the log accepts appends again.
 * The same directory is reused across kills, so recovery runs on logs that
 * earlier recoveries produced.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { SegmentedLog } from '../../src/log/index.js';
import { announceSeed, seededRandom } from '../support/kit.js';

const fixture = resolve(import.meta.dirname, 'fixtures/log-appender.mjs');
const compiledLog = resolve(import.meta.dirname, '../../dist/src/log/index.js');
const kills = 24;
const appenders = 32;

interface Ack {
  readonly kind: number;
  readonly timestamp: number;
  readonly hash: string;
}

interface RunOutput {
  readonly acks: Map<number, Ack>;
  readonly snapshots: { lsn: number; hash: string }[];
}

/** Starts the child and SIGKILLs it `killAfterMs` after it is ready (or after spawn when `early`). */
function runUntilKilled(dir: string, seed: number, segmentBytesMax: number, killAfterMs: number, early: boolean): Promise<RunOutput> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [fixture, dir, String(seed), String(segmentBytesMax), String(appenders)], { stdio: ['ignore', 'pipe', 'pipe'] });
    const output: RunOutput = { acks: new Map(), snapshots: [] };
    let buffered = '';
    let errors = '';
    const kill = (): void => void setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    if (early) kill();
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!; // a line cut by the kill is not an acknowledgement
      for (const line of lines) parseLine(line, output, early ? undefined : kill);
    });
    child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    child.on('exit', (code, signal) => (signal === 'SIGKILL' ? done(output) : fail(new Error(`log-appender exited by itself (code ${code}): ${errors}`))));
  });
}

function parseLine(line: string, output: RunOutput, onReady: (() => void) | undefined): void {
  const [what, ...fields] = line.split(' ');
  if (what === 'ready') onReady?.();
  else if (what === 'ack') {
    const [lsn, kind, timestamp, hash] = fields;
    expect(output.acks.has(Number(lsn))).toBe(false);
    output.acks.set(Number(lsn), { kind: Number(kind), timestamp: Number(timestamp), hash: hash! });
  } else if (what === 'snap') output.snapshots.push({ lsn: Number(fields[0]), hash: fields[1]! });
  else throw new Error(`unexpected line from log-appender: ${line}`);
}

function contentHash(body: unknown): string {
  const { worker, seq, payload } = body as { worker: number; seq: number; payload: Uint8Array };
  return createHash('sha1').update(`${worker}:${seq}:`).update(payload).digest('hex');
}

/** Reopens the log and checks every acknowledgement so far; says whether recovery repaired a torn tail. */
async function checkRecovered(dir: string, acked: ReadonlyMap<number, Ack>, newestSnapshot: { lsn: number; hash: string } | undefined): Promise<{ torn: boolean; segments: number }> {
  let torn = false;
  const logger = pino({ level: 'warn' }, { write: (line: string) => void (torn ||= line.includes('torn')) });
  const log = await SegmentedLog.open({ dir, logger });
  const found = new Map<number, Ack>();
  for (const r of log.read()) if (acked.has(r.lsn)) found.set(r.lsn, { kind: r.kind, timestamp: r.timestamp, hash: contentHash(r.body) });
  const missing = [...acked.keys()].filter((lsn) => !found.has(lsn));
  expect(missing, 'acknowledged LSNs missing after recovery').toEqual([]);
  for (const [lsn, ack] of acked) expect(found.get(lsn), `content of LSN ${lsn}`).toEqual(ack);
  expect(log.nextLsn).toBeGreaterThan(Math.max(0, ...acked.keys()));
  const snapshot = log.loadSnapshot();
  if (newestSnapshot !== undefined) {
    expect(snapshot?.lsn).toBeGreaterThanOrEqual(newestSnapshot.lsn);
    if (snapshot?.lsn === newestSnapshot.lsn) expect(createHash('sha1').update(snapshot.data).digest('hex')).toBe(newestSnapshot.hash);
  }
  const next = log.nextLsn;
  expect(await log.appendOne({ kind: 255, timestamp: Date.now(), body: { worker: -1, seq: next, payload: new Uint8Array() } })).toBe(next);
  const segments = log.segments().length;
  await log.close();
  return { torn, segments };
}

describe('segmented log under SIGKILL', () => {
  it(`keeps every acknowledged record, byte for byte, across ${kills} kills at random moments`, { timeout: 120_000 }, async () => {
    if (!fs.existsSync(compiledLog)) throw new Error(`${compiledLog} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) before the crash tests`);
    const seed = announceSeed('log crash');
    const random = seededRandom(seed);
    const dir = fs.mkdtempSync(join(os.tmpdir(), 'cairn-log-crash-'));
    const acked = new Map<number, Ack>();
    let newestSnapshot: { lsn: number; hash: string } | undefined;
    const stats = { early: 0, tornTails: 0, segments: 0 };
    try {
      for (let kill = 0; kill < kills; kill++) {
        const early = random() < 0.2;
        const killAfterMs = early ? 40 + Math.floor(random() * 120) : Math.floor(random() * 400);
        const segmentBytesMax = [64 * 1024, 256 * 1024, 1024 * 1024][Math.floor(random() * 3)]!;
        const run = await runUntilKilled(dir, seed + kill, segmentBytesMax, killAfterMs, early);
        for (const [lsn, ack] of run.acks) {
          expect(acked.has(lsn), `LSN ${lsn} acknowledged twice`).toBe(false);
          acked.set(lsn, ack);
        }
        for (const s of run.snapshots) if (newestSnapshot === undefined || s.lsn >= newestSnapshot.lsn) newestSnapshot = s;
        const recovered = await checkRecovered(dir, acked, newestSnapshot);
        stats.early += early ? 1 : 0;
        stats.tornTails += recovered.torn ? 1 : 0;
        stats.segments = recovered.segments;
      }
      console.log(`log crash: ${kills} kills (${stats.early} before the child was ready), ${acked.size} acknowledged records checked, ${stats.tornTails} torn tails repaired, ${stats.segments} segments, newest snapshot LSN ${newestSnapshot?.lsn}`);
      expect(acked.size).toBeGreaterThan(1000);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
