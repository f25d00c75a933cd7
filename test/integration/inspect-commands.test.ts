/**
 * `cairn inspect` and `cairn recover` over a data directory written by a real
 * Broker on a real SegmentedLog (MQTT and AMQP commands through the core API).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { SegmentedLog } from '../../src/log/index.js';
import { decodeState, encodeState, type EncodedState } from '../../src/projections/snapshot-codec.js';
import { toJsonValue } from '../../src/inspect/format.js';
import { inspect, recover } from '../support/cli-run.js';
import { WorkloadDriver } from '../support/inspect-workload.js';


let root: string;
let dir: string;
let midLsn: number;
let midState: EncodedState;
let midTime: number;
let helloLsn: number;
let secondLsn: number;
let lastLsn: number;
let snapshotLsn: number;

beforeAll(async () => {
  root = fs.mkdtempSync(join(os.tmpdir(), 'cairn-inspect-'));
  dir = join(root, 'data');
  const w = await WorkloadDriver.open(dir);
  await w.connect('sub1');
  await w.subscribe('sub1', 'a/#', 1);
  await w.connect('pub1');
  await w.declareQueue('q1');
  await w.bind('q1', 'amq.topic', 'a.#');
  helloLsn = w.log.nextLsn;
  await w.publish('pub1', 'a/b', 'hello', 1);
  await w.amqpPublish('', 'q1', 'amqp-one');
  await w.pubackAll('sub1');
  await w.getAndSettle('q1', 'ack');
  await w.publish('pub1', 'r/t', 'retained-value', 1, true);
  await w.publish('pub1', 'sensors/t1', '{"celsius":21}', 1);
  await w.snapshot();
  snapshotLsn = w.broker.state.lastLsn;
  secondLsn = w.log.nextLsn;
  await w.publish('pub1', 'a/c', 'second', 1);
  midLsn = w.broker.state.lastLsn;
  midTime = w.broker.state.lastTimestamp;
  midState = encodeState(w.broker.state);
  await w.purgeQueue('q1');
  w.detach('sub1');
  await w.connect('sub1', true); // clean session over a persistent one: session end
  await w.publish('pub1', 'a/d', Uint8Array.from([0, 1, 2, 255]), 1);
  lastLsn = w.broker.state.lastLsn;
  await w.close();
});

afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

describe('inspect records', () => {
  it('prints a table with LSN, ISO time, kind and summary', async () => {
    const r = await inspect('records', '--data', dir);
    expect(r.code).toBe(0);
    const lines = r.out.trim().split('\n');
    expect(lines).toHaveLength(lastLsn);
    const hello = lines.find((l) => l.includes('"hello"'))!;
    expect(hello).toMatch(/^\s+\d+ {2}2024-05-01T12:00:\d\d\.\d{3}Z {2}msg/);
    expect(hello).toContain('topic=a/b');
    expect(hello).toContain('from=pub1');
    expect(hello).toContain('c:sub1#1');
    expect(hello).toContain('q:q1#');
    expect(r.out).toContain('0x000102ff (4 B)');
  });

  it('--json gives one object per line with an lsn and payloads as utf8 or base64', async () => {
    const r = await inspect('records', '--data', dir, '--json', '--kind', 'msg');
    expect(r.code).toBe(0);
    const rows = r.out.trim().split('\n').map((l) => JSON.parse(l) as { lsn: number; kind: string; body: { p: unknown; t: string } });
    expect(rows.every((row) => row.kind === 'msg' && typeof row.lsn === 'number')).toBe(true);
    expect(rows.find((row) => row.lsn === helloLsn)?.body.p).toEqual({ utf8: 'hello' });
    expect(rows.find((row) => row.body.t === 'a/d')?.body.p).toEqual({ base64: Buffer.from([0, 1, 2, 255]).toString('base64') });
  });

  it('filters by client, queue, topic, LSN range, time and limit', async () => {
    const lsns = async (...args: string[]): Promise<number[]> => {
      const r = await inspect('records', '--data', dir, '--json', ...args);
      expect(r.code).toBe(0);
      return r.out.trim() === '' ? [] : r.out.trim().split('\n').map((l) => (JSON.parse(l) as { lsn: number }).lsn);
    };
    expect((await lsns('--client', 'sub1')).length).toBeGreaterThan(3);
    const queueRows = await lsns('--queue', 'q1', '--kind', 'drop');
    expect(queueRows).toHaveLength(1);
    expect(await lsns('--topic', 'r/#', '--kind', 'retain')).toHaveLength(1);
    expect(await lsns('--from', '3', '--to', '5')).toEqual([3, 4, 5]);
    expect(await lsns('--limit', '2')).toEqual([1, 2]);
    const sinceMid = await lsns('--since', new Date(midTime).toISOString());
    expect(sinceMid[0]).toBe(midLsn);
    const untilMid = await lsns('--until', new Date(midTime).toISOString());
    expect(untilMid[untilMid.length - 1]).toBe(midLsn);
    expect(await lsns('--since', '1h')).toEqual([]); // the workload's clock is in 2024
  });
});

describe('inspect verify', () => {
  it('says healthy and exits 0 on an intact log', async () => {
    const r = await inspect('verify', '--data', dir);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`LSN 1..${lastLsn}`);
    expect(r.out).toContain('healthy');
  });

  it('reports a torn tail as recoverable with its segment and LSN (exit 1)', async () => {
    const copy = join(root, 'torn');
    fs.cpSync(dir, copy, { recursive: true });
    const segment = fs.readdirSync(copy).filter((f) => f.endsWith('.seg')).sort().pop()!;
    fs.appendFileSync(join(copy, segment), Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]));
    const r = await inspect('verify', '--data', copy);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`torn tail in segment ${segment} at LSN ${lastLsn + 1}`);
    expect(r.out).toContain('recoverable');
  });

  it('reports a flipped byte in the middle as a bad record (exit 1)', async () => {
    const copy = join(root, 'flipped');
    fs.cpSync(dir, copy, { recursive: true });
    const segment = fs.readdirSync(copy).filter((f) => f.endsWith('.seg')).sort()[0]!;
    const bytes = fs.readFileSync(join(copy, segment));
    bytes[60] = bytes[60]! ^ 0xff;
    fs.writeFileSync(join(copy, segment), bytes);
    const r = await inspect('verify', '--data', copy);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(new RegExp(`BAD RECORD segment ${segment} LSN 1 `));
    expect(r.out).toContain('damaged');
  });
});

describe('inspect state', () => {
  it('--at LSN --json equals the live state at that LSN', async () => {
    const r = await inspect('state', '--data', dir, '--at', String(midLsn), '--json');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out) as { lsn: number; snapshotLsn: number; state: unknown; summary: { queues: Array<{ name: string; depth: number }> } };
    expect(out.lsn).toBe(midLsn);
    expect(out.snapshotLsn).toBe(snapshotLsn);
    expect(out.state).toEqual(toJsonValue(midState));
    const depth = decodeState(midState).queues.get('q1')!.pending.size;
    expect(depth).toBeGreaterThan(0);
    expect(out.summary.queues).toEqual([expect.objectContaining({ name: 'q1', depth })]);
  });

  it('--at TIME picks the last record at or before it', async () => {
    const r = await inspect('state', '--data', dir, '--at', new Date(midTime).toISOString(), '--json');
    expect(r.code).toBe(0);
    expect((JSON.parse(r.out) as { state: unknown }).state).toEqual(toJsonValue(midState));
  });

  it('prints sessions, retained values, queues, bindings and collections', async () => {
    const r = await inspect('state', '--data', dir, '--at', String(midLsn));
    expect(r.code).toBe(0);
    expect(r.out).toContain(`state at LSN ${midLsn}`);
    expect(r.out).toMatch(/sub1 {2}pending \d+/);
    expect(r.out).toContain('a/# (qos 1)');
    expect(r.out).toContain('r/t  qos 1  "retained-value"');
    expect(r.out).toMatch(/q1 {2}depth \d+/);
    expect(r.out).toContain('amq.topic -> q1  key a.#');
    expect(r.out).toContain('readings  1 document(s)');
  });
});

describe('inspect segments and stats', () => {
  it('lists segments with LSN and time ranges and the snapshots', async () => {
    const r = await inspect('segments', '--data', dir);
    expect(r.code).toBe(0);
    expect(r.out).toContain('00000000000000000001.seg');
    expect(r.out).toMatch(new RegExp(`\\s1\\s+${lastLsn}\\s+${lastLsn}\\s`));
    expect(r.out).toContain(`snapshot ${String(snapshotLsn).padStart(20, '0')}.snap LSN ${snapshotLsn}`);
  });

  it('counts records and bytes by kind, and top topics, clients, queues', async () => {
    const r = await inspect('stats', '--data', dir, '--json');
    expect(r.code).toBe(0);
    const stats = JSON.parse(r.out) as { records: number; kinds: Array<{ kind: string; records: number }>; topTopics: Array<{ name: string }>; topClients: Array<{ name: string; messages: number }>; topQueues: Array<{ name: string }> };
    expect(stats.records).toBe(lastLsn);
    expect(stats.kinds.find((k) => k.kind === 'msg')!.records).toBeGreaterThanOrEqual(3);
    expect(stats.topClients[0]!.name).toBe('pub1');
    expect(stats.topQueues.map((q) => q.name)).toContain('q1');
    const table = await inspect('stats', '--data', dir, '--from', '1', '--to', String(midLsn));
    expect(table.out).toContain(`${midLsn} record(s)`);
    expect(table.out).toContain('top topics');
  });
});

describe('inspect trace', () => {
  it('--lsn shows publish, routing, delivery and acks with LSN and time', async () => {
    const r = await inspect('trace', '--data', dir, '--lsn', String(helloLsn));
    expect(r.code).toBe(0);
    expect(r.out).toContain(`message LSN ${helloLsn} at 2024-05-01T`);
    expect(r.out).toContain('published by pub1 to topic a/b (qos 1), payload "hello" (5 B)');
    expect(r.out).toMatch(/routed to: session sub1 seq 1 \(qos 1\), queue q1 seq 1/);
    expect(r.out).toMatch(/LSN +\d+ {2}2024-\S+ {2}session sub1 seq 1: delivered/);
    expect(r.out).toMatch(/session sub1 seq 1: acked/);
    expect(r.out).toMatch(/queue q1 seq 1: acked/);
  });

  it('--queue/--seq and --client/--seq find the message; purge and session end are shown', async () => {
    const byQueue = await inspect('trace', '--data', dir, '--queue', 'q1', '--seq', '3', '--json');
    expect(byQueue.code).toBe(0);
    const trace = JSON.parse(byQueue.out) as { lsn: number; destinations: Array<{ destination: string; status: string; steps: Array<{ what: string }> }> };
    expect(trace.lsn).toBe(secondLsn);
    expect(trace.destinations.find((d) => d.destination === 'queue q1')!.status).toBe('dropped');
    expect(trace.destinations.find((d) => d.destination === 'queue q1')!.steps.map((s) => s.what)).toContain('dropped (queue purged)');
    const session = trace.destinations.find((d) => d.destination === 'session sub1')!;
    expect(session.status).toBe('discarded');
    const byClient = await inspect('trace', '--data', dir, '--client', 'sub1', '--seq', '1');
    expect(byClient.out).toContain(`message LSN ${helloLsn}`);
  });

  it('--topic lists every matching message; a pending one says so', async () => {
    const r = await inspect('trace', '--data', dir, '--topic', 'a/+');
    expect(r.code).toBe(0);
    expect(r.out.match(/^message LSN/gm)?.length).toBeGreaterThanOrEqual(3);
    const none = await inspect('trace', '--data', dir, '--topic', 'zzz/#');
    expect(none.code).toBe(1);
    expect(none.out).toContain('no matching message');
    const bad = await inspect('trace', '--data', dir, '--queue', 'q1');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('needs --seq');
  });
});

describe('recover', () => {
  it('--lsn N gives a directory whose start-up state is the state right after N, without touching the source', async () => {
    const before = fs.readdirSync(dir).map((f) => [f, fs.statSync(join(dir, f)).size]);
    const target = join(root, 'recovered-lsn');
    const r = await recover('--from', dir, '--to', target, '--lsn', String(midLsn));
    expect(r.code).toBe(0);
    expect(r.out).toContain(`state right after LSN ${midLsn}`);
    expect(fs.readdirSync(dir).map((f) => [f, fs.statSync(join(dir, f)).size])).toEqual(before);
    const log = await SegmentedLog.open({ dir: target });
    const broker = Broker.open({ log });
    expect(encodeState(broker.state)).toEqual(midState);
    expect(log.nextLsn).toBe(midLsn + 1);
    await log.close();
  });

  it('--time T recovers to the last record at or before T', async () => {
    const target = join(root, 'recovered-time');
    const r = await recover('--from', dir, '--to', target, '--time', new Date(midTime).toISOString());
    expect(r.code).toBe(0);
    const log = await SegmentedLog.open({ dir: target });
    expect(encodeState(Broker.open({ log }).state)).toEqual(midState);
    await log.close();
  });

  it('refuses a non-empty target and an LSN outside the history, naming the range', async () => {
    const busy = join(root, 'busy');
    fs.mkdirSync(busy);
    fs.writeFileSync(join(busy, 'x'), 'x');
    const r1 = await recover('--from', dir, '--to', busy, '--lsn', '3');
    expect(r1.code).toBe(2);
    expect(r1.err).toContain('not empty');
    const r2 = await recover('--from', dir, '--to', join(root, 'never'), '--lsn', String(lastLsn + 100));
    expect(r2.code).toBe(2);
    expect(r2.err).toContain(`the log holds LSN 1..${lastLsn}`);
    expect(fs.existsSync(join(root, 'never'))).toBe(false);
  });
});

describe('bad input exits 2 with one line and no stack trace', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['missing data dir', ['records', '--data', '/nonexistent/cairn'], /no data directory/],
    ['no --data', ['records'], /--data is required/],
    ['unknown subcommand', ['nope'], /unknown subcommand 'nope'/],
    ['no subcommand', [], /subcommand is required/],
    ['unknown flag', ['records', '--data', '.', '--colour'], /unknown flag --colour/],
    ['bad time', ['records', '--data', '.', '--since', 'yesterday-ish'], /not a time/],
    ['bad kind', ['records', '--data', '.', '--kind', 'msg,blob'], /unknown record kind 'blob'/],
    ['bad topic filter', ['records', '--data', '.', '--topic', 'a/#/b'], /not an MQTT topic filter/],
    ['bad lsn', ['state', '--data', '.', '--at', '-5'], /not a time/],
  ];
  for (const [name, args, message] of cases) {
    it(name, async () => {
      const resolved = args.map((a) => (a === '.' ? dir : a));
      const r = await inspect(...resolved);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(message);
      expect(r.err.trim().split('\n')).toHaveLength(1);
      expect(r.err).not.toContain('    at ');
    });
  }

  it('an LSN out of range names the available range', async () => {
    const r = await inspect('state', '--data', dir, '--at', '999999');
    expect(r.code).toBe(2);
    expect(r.err).toContain(`LSN 999999 is out of range: the log holds LSN 1..${lastLsn}`);
  });
});
