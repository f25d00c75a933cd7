/**
 * Who has the CPU in the slowest 1% of durable MQTT round trips (issue 18):
 * Cairn (the built broker, its own process) and the bare durable Node server
 * (bare-puback-server.ts durable), both stage-timed (src/stage-timing.ts, with
 * CAIRN_STAGE_TRACES: every round trip's marks), are sent sequential QoS 1
 * publishes in alternating blocks — Cairn's to a topic with one offline
 * persistent subscriber, a fresh session per block — while `perf record`
 * traces every context switch, wake-up and interrupt on the machine
 * (CLOCK_MONOTONIC, the clock the client times each round trip with). Then
 * tail-trace-join.ts says, per server, where each tail round trip's time
 * beyond the p50 went and who held the CPUs while the loop or the client
 * waited for one; the stage marks split that by before the read, read → ack
 * written, and after it.
 *
 *   node dist/tools/tail-trace.js OUTDIR [blocks=10] [round trips per block=1000] [lead-in=200] [stages=on|off]
 *   node dist/tools/tail-trace.js bench OUTDIR [round trips per case=2000]
 *   node dist/tools/tail-trace.js report OUTDIR
 *
 * Each block starts with lead-in unmeasured publishes (Cairn: on its fresh
 * session, which then holds lead-in + per block messages; the bench's holds
 * 4,000: 2000 2000). stages=off runs both servers without stage timing, as the
 * bench's measured ones (no split at the marks then). `bench` runs instead
 * bench.js mqtt's latency phase itself (runBench), its round trips recorded;
 * with TAIL_TRACE_CPU_SAMPLES set it also samples Cairn's threads' stacks
 * (`perf record -e cpu-clock -g`, OUTDIR/perf-cpu.data): what V8's threads ran;
 * with TAIL_TRACE_WARM_PASSES=N the whole phase runs N times unrecorded first,
 * in the same processes (a JIT that has seen the alternation for longer).
 * Node names none of its threads; the report tells them by their order of
 * creation: loop+1 is V8's delayed-task thread, loop+2..5 its platform workers
 * (concurrent compilation, marking, sweeping), loop+7 on libuv's pool.
 *
 * Needs `perf` and the right to trace the whole machine (root, or
 * perf_event_paranoid ≤ -1); run it under the machine lock, as a bench.
 * OUTDIR keeps perf.data, the round trips and the stage traces for another look.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import mqtt, { type MqttClient } from 'mqtt';
import { stageTimingVariable, stageTracesVariable, Stage, type StageTraces } from '../src/stage-timing.js';
import { compileBareCServer, startBareServerProcess, type BareServerProcess } from './bare-server-process.js';
import { commandExists, fmt, openOfflineSubscriberQos1, openSequentialQos1, printTable, startCairn, startMosquitto, tempDir, type BenchServer } from './bench-mqtt.js';
import { rawDiskOpeners } from './bench-durable-floor.js';
import { interleavedCases, recordRoundTrips, type RoundTripCase } from './bench-side-by-side.js';
import { categories, parsePerfLine, schedTrace, splitWindow, summarizeSplits, type Parties, type SchedEvent, type SchedTrace, type TailSummary } from './tail-trace-join.js';
import { partitionPoint } from './partition-point.js';

const payload = Buffer.alloc(100, 0x61);
const warmUpPublishes = 10_000;
const sessionWarmUpRounds = 4;
const sessionWarmUpPublishes = 2_000;
const perfEvents = 'sched:sched_switch,sched:sched_wakeup,irq:irq_handler_entry,irq:irq_handler_exit,irq:softirq_entry,irq:softirq_exit';

type ServerName = string;
interface RoundTrip { readonly server: ServerName; readonly startNs: number; readonly endNs: number }
/** What run() and runBench() leave in OUTDIR/rounds.json; `bench`: the other processes of a bench run, by name. */
interface Rounds {
  readonly pids: { cairn: number; bare: number; client: number; perf: number; bench?: Record<string, number> };
  readonly names: Record<string, Record<string, string>>;
  readonly rounds: RoundTrip[];
}

const now = (): number => Number(process.hrtime.bigint());

function connect(port: number, clientId: string, clean = true): Promise<MqttClient> {
  return mqtt.connectAsync({ host: '127.0.0.1', port, clientId, clean, reconnectPeriod: 0, connectTimeout: 10_000 });
}

async function publishMany(client: MqttClient, topic: string, count: number, server?: ServerName, into?: RoundTrip[]): Promise<void> {
  for (let i = 0; i < count; i++) {
    const startNs = now();
    await client.publishAsync(topic, payload, { qos: 1 });
    if (server !== undefined) into!.push({ server, startNs, endNs: now() });
  }
}

/** A stored session for `clientId` subscribed to `topic` at QoS 1, offline: every publish to it is stored for it. */
async function offlineSession(port: number, clientId: string, topic: string): Promise<void> {
  const subscriber = await connect(port, clientId, false);
  await subscriber.subscribeAsync(topic, { qos: 1 });
  await subscriber.endAsync();
}

async function dropSession(port: number, clientId: string): Promise<void> {
  await (await connect(port, clientId, true)).endAsync();
}

function threadNames(pid: number): Map<number, string> {
  const names = new Map<number, string>();
  for (const task of fs.readdirSync(`/proc/${pid}/task`)) names.set(Number(task), fs.readFileSync(`/proc/${pid}/task/${task}/comm`, 'utf8').trim());
  return names;
}

export async function readPerf(file: string): Promise<SchedEvent[]> {
  const script = spawn('perf', ['script', '--ns', '-i', file, '-F', 'comm,pid,tid,cpu,time,event,trace'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const events: SchedEvent[] = [];
  for await (const line of createInterface({ input: script.stdout })) {
    const event = parsePerfLine(line);
    if (event !== undefined) events.push(event);
  }
  return events;
}

/** Starts `perf record` of the whole machine into OUTDIR/perf.data; resolves once it is (likely) recording. */
export async function startPerf(outDir: string): Promise<ReturnType<typeof spawn>> {
  const perf = spawn('perf', ['record', '-q', '-o', join(outDir, 'perf.data'), '-k', 'CLOCK_MONOTONIC', '-a', '-e', perfEvents], { stdio: 'ignore' });
  await new Promise((done) => setTimeout(done, 1500)); // perf's start-up: it says nothing when it is recording
  return perf;
}

export async function stopPerf(perf: ReturnType<typeof spawn> | undefined): Promise<void> {
  if (perf === undefined || perf.exitCode !== null || perf.signalCode !== null) return; // perf re-raises the SIGINT it ends on
  const exited = new Promise((done) => perf.once('exit', done));
  perf.kill('SIGINT');
  await exited;
}

/**
 * The bench's own latency phase (bench-mqtt.ts runCases: the raw disk, every server's no-subscriber case, the
 * durable cases; interleavedCases, its slices and warm-ups; Mosquitto when installed; no stage timing), each
 * round trip recorded (bench-side-by-side.ts recordRoundTrips), perf recording from the first sample on:
 * the tail in the bench's own context, where the other servers idle between their slices.
 */
async function runBench(outDir: string, count: number): Promise<void> {
  fs.mkdirSync(outDir, { recursive: true });
  const data = tempDir('cairn-tail-bench-');
  const started: Array<{ stop(): Promise<void> }> = [];
  const rounds: RoundTrip[] = [];
  let perf: ReturnType<typeof spawn> | undefined;
  let cpuPerf: ReturnType<typeof spawn> | undefined;
  const offsetMs = Number(process.hrtime.bigint()) / 1e6 - performance.now();
  let current = '';
  /** False in the warm-up passes: their round trips are neither traced nor recorded. */
  let recording = false;
  recordRoundTrips((startedMs, endedMs) => { if (recording) rounds.push({ server: current, startNs: (startedMs + offsetMs) * 1e6, endNs: (endedMs + offsetMs) * 1e6 }); });
  const names: Record<string, Record<number, string>> = {};
  const bench: Record<string, number> = {};
  let cairnPid = 0;
  let barePid = 0;
  try {
    const cairnData = join(data.dir, 'cairn');
    fs.mkdirSync(cairnData);
    const broker = await startCairn(cairnData);
    started.push(broker);
    cairnPid = broker.child.pid!;
    const node = (mode: string, ...args: string[]): Promise<BareServerProcess> => startBareServerProcess(process.execPath, [join(import.meta.dirname, 'bare-puback-server.js'), mode, ...args]);
    const servers: Array<[string, BenchServer & { stop(): Promise<void> }]> = [];
    const add = async (name: string, server: Promise<BenchServer & { stop(): Promise<void> }>): Promise<void> => {
      const running = await server;
      started.push(running);
      servers.push([name, running]);
      bench[name] = running.pid!;
    };
    if (commandExists('mosquitto')) {
      fs.mkdirSync(join(data.dir, 'mosquitto'));
      await add('Mosquitto', startMosquitto(join(data.dir, 'mosquitto')));
    }
    await add('bare Node data', node('data'));
    await add('bare Node direct', node('direct'));
    await add('bare durable Node', node('durable', join(data.dir, 'node-publishes')));
    barePid = bench['bare durable Node']!;
    const build = compileBareCServer(data.dir);
    if ('binary' in build) {
      await add('bare C', startBareServerProcess(build.binary, ['nosub']));
      await add('bare durable C', startBareServerProcess(build.binary, ['durable', join(data.dir, 'c-publishes')]));
    }
    const port = (name: string): number | undefined => servers.find(([n]) => n === name)?.[1].port;
    const cases: Array<[string, () => Promise<RoundTripCase>]> = [
      ['raw disk, calling thread', rawDiskOpeners[0]!], ['raw disk, pool', rawDiskOpeners[1]!],
      ['Cairn no subscriber', () => openSequentialQos1(broker.mqttPort, 'bench/nosub')],
    ];
    const ifThere = (name: string, label: string, open: (p: number) => Promise<RoundTripCase>): void => {
      const p = port(name);
      if (p !== undefined) cases.push([label, () => open(p)]);
    };
    ifThere('Mosquitto', 'Mosquitto no subscriber', (p) => openSequentialQos1(p, 'bench/nosub'));
    for (const name of ['bare Node data', 'bare Node direct', 'bare C']) ifThere(name, name, (p) => openSequentialQos1(p, 'bench/nosub'));
    cases.push(['Cairn', () => openOfflineSubscriberQos1(broker.mqttPort, 'bench/offline')]);
    ifThere('Mosquitto', 'Mosquitto offline subscriber', (p) => openOfflineSubscriberQos1(p, 'bench/offline'));
    for (const name of ['bare durable Node', 'bare durable C']) ifThere(name, name, (p) => openSequentialQos1(p, 'bench/offline'));
    const openers = cases.map(([label, open]) => async (): Promise<RoundTripCase> => {
      const opened = await open();
      return {
        sample: async (n) => {
          if (!recording) return opened.sample(n);
          if (perf === undefined && process.env['TAIL_TRACE_CPU_SAMPLES'] !== undefined) {
            // Where Cairn's threads spend their CPU (stacks: node's symbols, V8's threads by their C++ frames).
            cpuPerf = spawn('perf', ['record', '-q', '-o', join(outDir, 'perf-cpu.data'), '-e', 'cpu-clock', '-F', '4000', '-g', '-p', String(cairnPid)], { stdio: 'ignore' });
          }
          perf ??= await startPerf(outDir);
          current = label;
          return opened.sample(n);
        },
        close: () => opened.close(),
      };
    });
    // TAIL_TRACE_WARM_PASSES=N: the whole phase N times unrecorded first (the same processes, so their JIT's state carries over).
    for (let pass = 0; pass < Number(process.env['TAIL_TRACE_WARM_PASSES'] ?? 0); pass++) await interleavedCases('tail-trace bench (warm-up pass)', openers, count);
    recording = true;
    const summaries = await interleavedCases('tail-trace bench', openers, count);
    cases.forEach(([label], i) => console.log(`${label}: p50 ${fmt(summaries[i]!.p50, 3)} ms, p99 ${fmt(summaries[i]!.p99, 3)} ms`));
    for (const [name, pid] of [['cairn', cairnPid], ['bare', barePid], ['client', process.pid]] as const) names[name] = Object.fromEntries(threadNames(pid));
  } finally {
    recordRoundTrips(undefined);
    await stopPerf(perf);
    await stopPerf(cpuPerf);
    for (const server of started) await server.stop();
    data.remove();
  }
  const rounds2: Rounds = { pids: { cairn: cairnPid, bare: barePid, client: process.pid, perf: perf?.pid ?? -1, bench }, names, rounds };
  fs.writeFileSync(join(outDir, 'rounds.json'), JSON.stringify(rounds2));
  console.log(`recorded in ${outDir}; now (outside the machine lock): node ${process.argv[1]} report ${outDir}`);
}

async function run(outDir: string, blocks: number, perBlock: number, blockLeadIn: number, stages: boolean): Promise<void> {
  fs.mkdirSync(outDir, { recursive: true });
  const data = tempDir('cairn-tail-trace-');
  const stageEnv = (name: string): Record<string, string> => (!stages ? {} : { [stageTimingVariable]: join(outDir, `${name}-stages.json`), [stageTracesVariable]: join(outDir, `${name}-traces.json`) });
  const broker = await startCairn(join(data.dir), stageEnv('cairn'));
  const bare = await startBareServerProcess(process.execPath, [join(import.meta.dirname, 'bare-puback-server.js'), 'durable', join(data.dir, 'bare-publishes')], stageEnv('bare'));
  const rounds: RoundTrip[] = [];
  let perf: ReturnType<typeof spawn> | undefined;
  const names: Record<string, Record<number, string>> = {};
  try {
    const cairnPublisher = await connect(broker.mqttPort, 'tail-pub');
    const barePublisher = await connect(bare.port, 'tail-pub');
    await publishMany(cairnPublisher, 'tail/nosub', warmUpPublishes);
    for (let round = 0; round < sessionWarmUpRounds; round++) {
      await offlineSession(broker.mqttPort, 'tail-warm', 'tail/offline');
      await publishMany(cairnPublisher, 'tail/offline', sessionWarmUpPublishes);
      await dropSession(broker.mqttPort, 'tail-warm');
    }
    await publishMany(barePublisher, 'tail/offline', warmUpPublishes);
    perf = await startPerf(outDir);
    for (let block = 0; block < blocks; block++) {
      const clientId = `tail-offline-${block}`;
      await offlineSession(broker.mqttPort, clientId, 'tail/offline');
      await publishMany(cairnPublisher, 'tail/offline', blockLeadIn);
      await publishMany(cairnPublisher, 'tail/offline', perBlock, 'Cairn', rounds);
      await dropSession(broker.mqttPort, clientId);
      await publishMany(barePublisher, 'tail/offline', blockLeadIn);
      await publishMany(barePublisher, 'tail/offline', perBlock, 'bare durable Node', rounds);
    }
    for (const [name, pid] of [['cairn', broker.child.pid!], ['bare', bare.pid!], ['client', process.pid]] as const) names[name] = Object.fromEntries(threadNames(pid));
    await cairnPublisher.endAsync();
    await barePublisher.endAsync();
  } finally {
    await stopPerf(perf);
    await broker.stop();
    await bare.stop();
    data.remove();
  }
  const pids = { cairn: broker.child.pid!, bare: bare.pid!, client: process.pid, perf: perf?.pid ?? -1 };
  fs.writeFileSync(join(outDir, 'rounds.json'), JSON.stringify({ pids, names, rounds }));
  console.log(`recorded in ${outDir}; now (outside the machine lock): node ${process.argv[1]} report ${outDir}`);
}

/** Reads what run() left in `outDir` and prints the tables. */
async function report(outDir: string): Promise<void> {
  const { pids, names, rounds } = JSON.parse(fs.readFileSync(join(outDir, 'rounds.json'), 'utf8')) as Rounds;
  const trace = schedTrace(await readPerf(join(outDir, 'perf.data')));
  const label = labeller(trace, pids, names);
  const servers: Array<[ServerName, number, string]> = [['Cairn', pids.cairn, 'cairn'], ['bare durable Node', pids.bare, 'bare']];
  for (const [server, pid, file] of servers) {
    const others = Object.keys(names[file] ?? {}).map(Number).filter((tid) => tid !== pid);
    const parties: Parties = { loop: pid, others, client: pids.client };
    const windows = rounds.filter((round) => round.server === server).map((round) => [round.startNs, round.endNs] as const);
    const splits = windows.map(([a, b]) => splitWindow(trace, parties, a, b, label));
    printSummary(`${server}, every round trip`, summarizeSplits(windows, splits));
    // The same without the round trips during which a process outside the measurement (neither server, nor the
    // client, nor perf, nor the kernel's threads) held a CPU: what is left is the two servers' own.
    const clean = windows.map((_, i) => i).filter((i) => ![...splits[i]!.heldAll.keys()].some((name) => name.startsWith(outsidePrefix)));
    printSummary(`${server}, only the round trips no outside process touched`, summarizeSplits(clean.map((i) => windows[i]!), clean.map((i) => splits[i]!)));
    stageSplit(trace, parties, clean.map((i) => windows[i]!), join(outDir, `${file}-traces.json`), label);
  }
}

const outsidePrefix = 'outside: ';
const us = (ns: number): string => fmt(ns / 1000, 1);

function printSummary(title: string, summary: TailSummary): void {
  console.log(`\n${title}: ${summary.roundTrips} round trips, p50 ${us(summary.p50Ns)} us, p99 ${us(summary.p99Ns)} us (p99/p50 ${fmt(summary.p99Ns / summary.p50Ns)}); slowest 1%: ${summary.tail}, mean excess over the p50 ${us(summary.meanExcessNs)} us`);
  const excessTotal = summary.tailMeanNs.reduce((sum, ns, c) => sum + ns - summary.medianNs[c]!, 0);
  const rows = [['where the round trip was (first match wins)', 'median us (all)', 'mean us (slowest 1%)', 'excess us', 'share of excess', 'slowest 1% with it biggest']];
  categories.forEach((name, c) => {
    const excess = summary.tailMeanNs[c]! - summary.medianNs[c]!;
    rows.push([name, us(summary.medianNs[c]!), us(summary.tailMeanNs[c]!), us(excess), `${fmt((100 * excess) / excessTotal, 0)}%`, String(summary.dominant[c])]);
  });
  printTable(rows);
  console.log('  while the loop or the client waited for a CPU (slowest 1%), the CPU it was queued on was held by, us per tail round trip [tail round trips where it held them longest]:');
  for (const [name, ns] of [...summary.heldBy].sort((a, b) => b[1] - a[1]).slice(0, 12)) {
    console.log(`    ${name.padEnd(48)} ${us(ns / summary.tail).padStart(8)}  [${summary.topHolder.get(name) ?? 0}]`);
  }
  if (summary.topHolder.has('none')) console.log(`    (never waited for a CPU: ${summary.topHolder.get('none')})`);
}

/**
 * The tail's categories split at the server's own marks: before its read, read → ack written, after it. Joined by
 * the read mark falling inside a client window.
 */
function stageSplit(trace: SchedTrace, parties: Parties, windows: ReadonlyArray<readonly [number, number]>, file: string, label: (holder: number | string) => string): void {
  const durations = windows.map(([a, b]) => b - a).sort((x, y) => x - y);
  const p99Ns = durations[Math.max(0, Math.ceil(0.99 * durations.length) - 1)]!;
  if (!fs.existsSync(file)) return;
  const traces = JSON.parse(fs.readFileSync(file, 'utf8')) as StageTraces;
  const marks = traces.durable
    .map((marksMs) => [marksMs[Stage.read], marksMs[Stage.ackWritten]] as const)
    .filter((pair): pair is readonly [number, number] => pair[0] !== null && pair[1] !== null && pair[0] !== undefined && pair[1] !== undefined)
    .map(([read, ack]) => [(read + traces.monotonicOffsetMs) * 1e6, (ack + traces.monotonicOffsetMs) * 1e6] as const)
    .sort((a, b) => a[0] - b[0]);
  const parts = ['before the read', 'read -> ack written', 'after the ack'];
  const sums = { all: parts.map(() => categories.map(() => [] as number[])), tail: parts.map(() => categories.map(() => [] as number[])) };
  let joined = 0;
  for (const [a, b] of windows) {
    const mark = marks[partitionPoint(marks.length, (i) => marks[i]![0] < a)];
    if (mark === undefined || mark[0] > b) continue;
    joined++;
    const bounds = [a, mark[0], Math.min(mark[1], b), b];
    for (let part = 0; part < 3; part++) {
      const split = splitWindow(trace, parties, bounds[part]!, bounds[part + 1]!, label);
      split.byCategory.forEach((ns, c) => {
        sums.all[part]![c]!.push(ns);
        if (b - a >= p99Ns) sums.tail[part]![c]!.push(ns);
      });
    }
  }
  const median = (values: number[]): number => [...values].sort((x, y) => x - y)[Math.floor((values.length - 1) / 2)] ?? Number.NaN;
  const mean = (values: number[]): number => values.reduce((x, y) => x + y, 0) / Math.max(1, values.length);
  const tailCount = sums.tail[0]![0]!.length;
  console.log(`  split at the server's marks (${joined} of ${windows.length} round trips joined to a stage trace, ${tailCount} at or above the p99), us: median (all) / mean (at or above the p99), where either is >= 5 us`);
  const rows = [['part', 'category', 'median', 'tail mean']];
  parts.forEach((part, p) => categories.forEach((name, c) => {
    const all = median(sums.all[p]![c]!);
    const tail = mean(sums.tail[p]![c]!);
    if (all >= 5000 || tail >= 5000) rows.push([part, name, fmt(all / 1000, 1), fmt(tail / 1000, 1)]);
  }));
  printTable(rows);
}

/** Names a CPU's holder: a thread of Cairn, of the bare server, of the client (this process), perf, a kernel thread, or another process. */
function labeller(trace: SchedTrace, pids: Rounds['pids'], names: Record<string, Record<string, string>>): (holder: number | string) => string {
  return (holder) => {
    if (typeof holder === 'string') return holder;
    if (holder === 0) return 'idle';
    for (const [file, pid, who] of [['cairn', pids.cairn, 'Cairn'], ['bare', pids.bare, 'bare server'], ['client', pids.client, 'client']] as const) {
      if (holder === pid) return `${who} loop`;
      const name = names[file]?.[String(holder)];
      // Node names none of its threads: each is told by its order of creation (loop + N).
      if (name !== undefined) return `${who} thread loop+${holder - pid} '${name}'`;
    }
    const thread = trace.threads.get(holder);
    if (thread?.tgid === pids.perf) return 'perf';
    if (thread === undefined) return 'unknown';
    if (thread.tgid === pids.cairn) return `Cairn thread (ended) '${thread.comm}'`;
    for (const [name, pid] of Object.entries(pids.bench ?? {})) if (thread.tgid === pid) return `bench: ${name}${holder === pid ? '' : ' (thread)'}`;
    const comm = thread.comm.replace(/\/\d+.*$/, '').replace(/:\d+.*$/, '');
    if (/^(kworker|kdamond|ksoftirqd|rcu_|migration|kcompactd|khugepaged|kswapd|jbd2|cpuhp|watchdog|kthreadd)/.test(comm)) return `kernel: ${comm}`;
    return `${outsidePrefix}${comm} (${thread.tgid})`;
  };
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'report' && rest[0] !== undefined) await report(rest[0]);
  else if (command === 'bench' && rest[0] !== undefined) await runBench(rest[0], Number(rest[1] ?? 2000));
  else if (command !== undefined) await run(command, Number(rest[0] ?? 10), Number(rest[1] ?? 1000), Number(rest[2] ?? 200), rest[3] !== 'off');
  else throw new Error('usage: tail-trace.js OUTDIR [blocks] [per block] [lead-in] [stages] | bench OUTDIR [round trips per case] | report OUTDIR');
}
