/**
 * MQTT benchmark: Cairn (the built dist/src/cli.js, run as a child process)
 * against the disk it writes to and, when `mosquitto` is installed, against
 * Mosquitto side by side. One run prints one table:
 *   - raw `write(100 B) + fdatasync` latency on the same disk (the floor for
 *     any per-message durable write), sampled in alternation with the
 *     latency cases (bench-durable-floor.ts: the durable round trip against
 *     its target);
 *   - 2,000 sequential QoS 1 publishes (after 10,000 unmeasured), each
 *     awaiting its PUBACK, with no subscriber and with one offline persistent
 *     subscriber (clean=false, subscribed at QoS 1, then disconnected: the
 *     durable path); the no-subscriber case also on a bare Node server that
 *     only answers (bare-puback-server.ts, read through 'data' events and
 *     directly) and on a bare C one (bare-puback-server.c, compiled here
 *     with `cc`; without one its rows say so), alternating with the
 *     brokers: the floor of any Node broker, and of any server, on this
 *     machine, beside each server's CPU per round trip; the durable case
 *     also on a bare Node and a bare C server that sync each PUBLISH (one
 *     O_DSYNC pwrite) before its PUBACK: the floor of a durable round trip
 *     from Node and from C on this machine, the VM's wake-ups included, with
 *     the durable target's ratio worked out for each (against its own
 *     no-subscriber round trip): the C one's says what the machine allows;
 *   - QoS 0 and QoS 1 throughput publisher → live clean subscriber
 *     (20,000 messages of 100 B, counted at the subscriber; median of three
 *     after one unmeasured run), and QoS 1 publisher → a shared subscription
 *     `$share/bench/...` with 4 live clean members (counted over all four);
 *     a QoS 1 publisher stays at most qos1WindowMessages ahead of what was
 *     received, below both brokers' bounds, so both deliver every message;
 *     QoS 0 runs without that window and with it; each row with the CPU
 *     time per message of the broker and of the client (this process);
 *   - the two QoS 1 throughput cases again with MQTT 5 clients, every publish
 *     carrying two user properties (stored with the message, sent on to the
 *     subscribers);
 *   - fan-out at QoS 0 and QoS 1: one publisher, 50 live clean subscribers
 *     of one topic, deliveries per second over all of them, with how many
 *     were missing (bench-mqtt-fanout.ts).
 * Both brokers run side by side and every case alternates between them
 * (bench-side-by-side.ts). CAIRN_BENCH_MQTT_CASES=latency or throughput runs
 * only those rows (throughput: the pub->sub, $share and fan-out ones).
 * Mosquitto runs with `persistence true` and `set_tcp_nodelay true`; its
 * persistence saves periodically, never fsyncing per message, so it is not
 * doing the same work on the durable path.
 * Nothing is installed here: without `mosquitto` its column is skipped.
 * Data lives in a temp dir (CAIRN_BENCH_DIR picks the disk), removed afterwards.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import { join } from 'node:path';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { interleavedCases, medianRuns, throughputRuns, timeRoundTrips, type LatencySummary, type RoundTripCase } from './bench-side-by-side.js';
import { durableTargetRows, rawDiskOpeners, rawDiskRows, threadTimeRow } from './bench-durable-floor.js';
import { threadTimes, timedCase, type TimedCase } from './bench-thread-times.js';
import { readStageReport, stageRows, stageTimingEnvironment } from './bench-stage-table.js';
import type { StageReport } from '../src/stage-timing.js';
import { startCairnProcess, stopChild, type CairnProcess } from './cairn-process.js';
import type { BareReadMode } from './bare-puback-server.js';
import { compileBareCServer, startBareServerProcess, type BareServerProcess } from './bare-server-process.js';
import { fanOut, fanOutCell, fanOutMessages, fanOutSubscribers, fanOutWindowMessages, type FanOut } from './bench-mqtt-fanout.js';

const payload = Buffer.alloc(100, 0x61);
const latencyCount = 2000;
// Unmeasured publishes before each latency case, the same for every server: a JIT-compiled broker runs
// partly unoptimised code for its first few thousand round trips (callgrind, main-thread instructions per
// no-subscriber round trip: 27.2k after 2,000, 18.8k after 10,000); the rows measure a broker that has
// been running, as a production one has.
const warmUpPublishes = 10_000;
// The offline-subscriber case stores every publish for its session (bound: 4,096 messages), so its
// warm-up is rounds of this many on scratch sessions, each dropped, then this many on the measured one.
const sessionWarmUpPublishes = 2000;
const sessionWarmUpRounds = 4;
export const throughputCount = 20_000;
const stallMs = 5_000;
/** Members of the shared subscription in the shared-subscription throughput case. */
export const sharedMembers = 4;
/**
 * A QoS 1 throughput case's publisher keeps at most this many messages published and not yet received (and a QoS 0
 * one's in its second row; its first row publishes all 20,000 at once, and its rcvd column shows any the brokers
 * dropped). Without a
 * window the publisher (one process with its subscriber) pipelines all 20,000, both brokers fall behind it and drop
 * past their bound for a live clean subscriber (Cairn: 4,096 held, the oldest go; Mosquitto's defaults: 20 in flight
 * + 1,000 queued, the newest go): the rows then compared unequal work (Cairn rcvd 18,644 against Mosquitto's 20,000
 * in one run, Mosquitto short in others). Below both bounds neither drops.
 */
export const qos1WindowMessages = 1_000;

// ---- shared helpers (also used by bench-amqp.ts) ---------------------------

export function benchBaseDir(): string {
  return process.env['CAIRN_BENCH_DIR'] ?? os.tmpdir();
}

export function tempDir(prefix: string): { dir: string; remove(): void } {
  const dir = fs.mkdtempSync(join(benchBaseDir(), prefix));
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Starts `cairn serve` on OS-picked ports, without its HTTP listener. */
export function startCairn(dataDir: string, env: Readonly<Record<string, string>> = {}): Promise<CairnProcess> {
  return startCairnProcess(dataDir, ['--http-port', 'off'], env);
}

export function commandExists(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

export function fmt(value: number, digits = 2): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

export function printTable(rows: readonly (readonly string[])[]): void {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  rows.forEach((row, index) => {
    console.log(row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  '));
    if (index === 0) console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  });
}

/** A TCP port free right now on 127.0.0.1 (the OS picks it; another process could take it before use). */
export function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolvePromise(port));
    });
  });
}

export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolvePromise(true); });
    socket.once('error', () => resolvePromise(false));
  });
}

// ---- Mosquitto -------------------------------------------------------------

export async function startMosquitto(dir: string): Promise<BenchServer & { stop(): Promise<void> }> {
  const port = await freePort();
  const config = join(dir, 'mosquitto.conf');
  // Persistence on (a snapshot at exit and every autosave_interval, never per message) and TCP_NODELAY, as issue 18 compares.
  fs.writeFileSync(config, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence true\npersistence_location ${dir}/\nset_tcp_nodelay true\n`);
  const child = spawn('mosquitto', ['-c', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  const errors: string[] = [];
  child.stderr!.on('data', (chunk: Buffer) => errors.push(chunk.toString()));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const deadline = Date.now() + 10_000;
  while (!(await canConnect(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stopChild(child, exited);
      throw new Error(`mosquitto did not start:\n${errors.join('')}`);
    }
    await new Promise((done) => setTimeout(done, 50));
  }
  return { port, pid: child.pid, stop: () => stopChild(child, exited) };
}

// ---- the bare floors (bare-puback-server.ts, bare-puback-server.c) ---------

/** A bare server in the table: its label, and the process (undefined: not measured, and `why` says why). */
interface BareServer {
  /** What it is and how it works, for its latency row; `name` is short, for the target rows. */
  readonly label: string;
  readonly name: string;
  readonly server: BareServerProcess | undefined;
  readonly why?: string;
  /** A durable one's no-subscriber counterpart (the same server without the write), for the durable target. */
  readonly nonDurable?: BareServer;
}

/** The Node bare server's two ways of reading and writing. */
const bareNodeModes = [['data', "'data' events and socket.write"], ['direct', 'direct reads and writes as Cairn (socket-reads.ts, socket-writes.ts)']] as const;

/** `bare-puback-server.js mode` (`durable FILE` with `durableFile`) as its own process. */
function startBareNodeServer(mode: BareReadMode | 'durable', durableFile?: string, env: Readonly<Record<string, string>> = {}): Promise<BareServerProcess> {
  return startBareServerProcess(process.execPath, [join(import.meta.dirname, 'bare-puback-server.js'), mode, ...(durableFile === undefined ? [] : [durableFile])], env);
}

/**
 * Starts every bare server: the no-subscriber ones (bareNodeModes, then C) and the durable ones (Node, then C), each
 * durable one writing to its own file in `dir`; the C ones only if bare-puback-server.c compiles here. Each process
 * goes into `started` as soon as it runs, for the caller to stop.
 */
async function startBareServers(dir: string, started: BareServerProcess[]): Promise<{ noSub: BareServer[]; durable: BareServer[] }> {
  const start = async (running: Promise<BareServerProcess>): Promise<BareServerProcess> => {
    started.push(await running);
    return started.at(-1)!;
  };
  const noSub: BareServer[] = [];
  for (const [mode, how] of bareNodeModes) noSub.push({ label: `bare Node PUBACK server, ${how}`, name: `bare Node ${mode}`, server: await start(startBareNodeServer(mode)) });
  const durable: BareServer[] = [{
    label: 'bare durable Node server (one O_DSYNC pwrite per PUBLISH on the event loop, then PUBACK)',
    name: 'bare durable Node',
    server: await start(startBareNodeServer('durable', join(dir, 'node-publishes'))),
    nonDurable: noSub[bareNodeModes.findIndex(([mode]) => mode === 'direct')]!,
  }];
  const build = compileBareCServer(dir);
  const startC = async (label: string, name: string, args: readonly string[]): Promise<BareServer> =>
    ('notMeasured' in build ? { label, name, server: undefined, why: build.notMeasured } : { label, name, server: await start(startBareServerProcess(build.binary, args)) });
  const cNoSub = await startC('bare C server (blocking read and send, a thread per connection)', 'bare C', ['nosub']);
  noSub.push(cNoSub);
  durable.push({ ...await startC('bare durable C server (one O_DSYNC pwrite per PUBLISH, then PUBACK)', 'bare durable C', ['durable', join(dir, 'c-publishes')]), nonDurable: cNoSub });
  return { noSub, durable };
}

// ---- MQTT cases --------------------------------------------------------------

function connect(port: number, clientId: string, clean = true, protocolVersion: 4 | 5 = 4): Promise<MqttClient> {
  const options: IClientOptions = { host: '127.0.0.1', port, clientId, clean, reconnectPeriod: 0, protocolVersion, connectTimeout: 10_000 };
  return mqtt.connectAsync(options);
}

/** What an MQTT 5 throughput case's publishes carry: two user properties (about 30 bytes on the wire). */
const benchUserProperties = { userProperties: { source: 'bench', unit: 'celsius' } };

/** Sequential QoS 1 publishes, each awaiting its PUBACK. */
export async function openSequentialQos1(
  port: number, topic: string, afterClose: () => Promise<void> = () => Promise.resolve(), warmUp = warmUpPublishes,
): Promise<RoundTripCase> {
  const publisher = await connect(port, `bench-pub-${topic}`);
  const publishOne = async (): Promise<void> => { await publisher.publishAsync(topic, payload, { qos: 1 }); };
  for (let i = 0; i < warmUp; i++) await publishOne();
  return {
    sample: (count) => timeRoundTrips(count, publishOne),
    close: async () => {
      await publisher.endAsync();
      await afterClose();
    },
  };
}

/** The same with one offline persistent subscriber (clean=false, QoS 1): every publish is stored for it. */
export async function openOfflineSubscriberQos1(port: number, topic: string): Promise<RoundTripCase> {
  const offline = async (clientId: string): Promise<RoundTripCase> => {
    const subscriber = await connect(port, clientId, false);
    await subscriber.subscribeAsync(topic, { qos: 1 });
    await subscriber.endAsync();
    // Closing drops the stored session and its queued messages.
    return openSequentialQos1(port, topic, async () => (await connect(port, clientId, true)).endAsync(), sessionWarmUpPublishes);
  };
  for (let round = 0; round < sessionWarmUpRounds; round++) await (await offline(`bench-offline-warm-${topic}`)).close();
  return offline(`bench-offline-${topic}`);
}

export interface Throughput {
  readonly rate: number; readonly received: number; readonly acked: number; readonly seconds: number;
  /** CPU time per message received, in microseconds: the broker's (every thread, when its process is known) and this client process's (withCpuTimes). */
  readonly brokerCpuUs?: number | undefined;
  readonly clientCpuUs?: number | undefined;
}

/**
 * `run` with the CPU time the broker's process and this one (the MQTT.js publisher and subscribers) spent meanwhile,
 * per message received: when the client spends more per message than the broker, the rate is mostly the client's,
 * and the broker's own cost per message shows only here.
 */
async function withCpuTimes(pid: number | undefined, run: () => Promise<Throughput>): Promise<Throughput> {
  const before = pid === undefined ? undefined : threadTimes(pid);
  const clientBefore = process.cpuUsage();
  const result = await run();
  const client = process.cpuUsage(clientBefore);
  const after = pid === undefined ? undefined : threadTimes(pid);
  if (result.received === 0) return result;
  const clientCpuUs = (client.user + client.system) / result.received;
  if (before === undefined || after === undefined) return { ...result, clientCpuUs };
  const ranNs = after.loopRunNs + after.otherRunNs - before.loopRunNs - before.otherRunNs;
  return { ...result, brokerCpuUs: ranNs / 1000 / result.received, clientCpuUs };
}

/**
 * Publisher → one live clean subscriber, or (sharedMembers > 0) the members of one shared subscription `$share/bench/TOPIC`;
 * with `protocolVersion` 5 every client is an MQTT 5 one and every publish carries user properties. With `windowMessages`
 * the publisher keeps at most that many messages published and not yet received (end to end): below a clean session's
 * bound, none is dropped, so the rate is that of a pipeline that delivers everything (without it a pipelined publisher
 * outruns the subscriber and the session drops the oldest past its bound: the rate is then of what arrived).
 */
export async function throughput(port: number, topic: string, qos: 0 | 1, sharedMembers = 0, protocolVersion: 4 | 5 = 4, windowMessages?: number): Promise<Throughput> {
  const filter = sharedMembers === 0 ? topic : `$share/bench/${topic}`;
  const subscribers = await Promise.all(Array.from({ length: Math.max(1, sharedMembers) }, (_, i) => connect(port, `bench-sub-${topic}-${i}`, true, protocolVersion)));
  const publisher = await connect(port, `bench-tpub-${topic}`, true, protocolVersion);
  // MQTT.js leaves Nagle on. A QoS 0 publisher gets nothing back to carry the broker's ACKs, so its last publishes,
  // less than a segment, waited for the receiver's delayed-ACK timer (40 ms on Linux) before they left: the same for
  // both brokers, and a third of a windowed QoS 0 case (one gap of ~40 ms before the last reads of the subscriber).
  if (publisher.stream instanceof net.Socket) publisher.stream.setNoDelay(true);
  const options = protocolVersion === 5 ? { qos, properties: benchUserProperties } : { qos };
  try {
    await Promise.all(subscribers.map((subscriber) => subscriber.subscribeAsync(filter, { qos })));
    let received = 0;
    let lastAt = performance.now();
    let done: () => void = () => undefined;
    const allReceived = new Promise<void>((resolvePromise) => { done = resolvePromise; });
    /** Wakes a publisher waiting for room in its window. */
    let roomMade: (() => void) | undefined;
    const onMessage = (): void => {
      received++;
      lastAt = performance.now();
      roomMade?.();
      if (received === throughputCount) done();
    };
    for (const subscriber of subscribers) subscriber.on('message', onMessage);
    let acked = 0;
    const started = performance.now();
    lastAt = started;
    // All received, or nothing arrived for stallMs (QoS 0 may drop).
    const finished = Promise.race([
      allReceived,
      new Promise<void>((resolvePromise) => {
        const timer = setInterval(() => {
          if (performance.now() - lastAt > stallMs) { clearInterval(timer); resolvePromise(); }
        }, 100);
        void allReceived.then(() => { clearInterval(timer); resolvePromise(); });
      }),
    ]).then(() => true);
    publishing: for (let i = 0; i < throughputCount; i++) {
      while (windowMessages !== undefined && i - received >= windowMessages) {
        if (await Promise.race([finished, new Promise<false>((wake) => { roomMade = () => wake(false); })])) break publishing;
      }
      // A QoS 0 publish gets no callback: MQTT.js would wait for it on 'drain' with one once-listener per publish made
      // while its socket holds more than its high-water mark, and Node removes each of n such listeners in O(n). The
      // client then paid more per message the more it published at once: against a broker that delivered more per read
      // of the subscriber, as the publisher here sends one message per message received.
      if (qos === 0) publisher.publish(topic, payload, options);
      else publisher.publish(topic, payload, options, (error) => { if (!error) acked++; });
    }
    await finished;
    const seconds = (lastAt - started) / 1000;
    return { rate: received / seconds, received, acked: qos === 0 ? Number.NaN : acked, seconds };
  } finally {
    for (const subscriber of subscribers) subscriber.end(true);
    publisher.end(true);
  }
}

/** A broker's latency cases. */
interface LatencyResults {
  readonly noSub: LatencySummary;
  readonly offline: LatencySummary;
}

/** A broker's throughput cases. */
interface ThroughputResults {
  readonly qos0: Throughput;
  readonly qos0Windowed: Throughput;
  readonly qos1: Throughput;
  readonly shared: Throughput;
  readonly qos1v5: Throughput;
  readonly sharedV5: Throughput;
  readonly fanOut0: FanOut;
  readonly fanOut1: FanOut;
}

/** The stage table's reports: Cairn's, and the bare durable Node server's, timed the same way in the same minutes. */
interface StageReports { readonly cairn: StageReport | undefined; readonly bareNode: StageReport | undefined }

/**
 * The per-stage table's own run: a second broker with stage timing on, the two sequential latency cases
 * (warm-up included) once each, unmeasured otherwise; its durable case alternates (interleavedCases) with the
 * bare durable Node server's, also stage-timed, so that Cairn's sync stage and the bare server's pwrite are timed
 * with one clock in the same minutes of the disk's drift. A report is undefined when its process wrote none.
 */
async function stagesOfSequentialCases(dir: string): Promise<StageReports> {
  const cairnTiming = stageTimingEnvironment(dir, 'cairn');
  const bareTiming = stageTimingEnvironment(dir, 'bare-node');
  const dataDir = join(dir, 'data');
  fs.mkdirSync(dataDir);
  const broker = await startCairn(dataDir, cairnTiming.env);
  let bare: BareServerProcess | undefined;
  try {
    bare = await startBareNodeServer('durable', join(dir, 'bare-node-publishes'), bareTiming.env);
    const noSub = await openSequentialQos1(broker.mqttPort, 'bench/nosub');
    await noSub.sample(latencyCount);
    await noSub.close();
    const barePort = bare.port;
    await interleavedCases('stage-timed durable case', [() => openOfflineSubscriberQos1(broker.mqttPort, 'bench/offline'), () => openSequentialQos1(barePort, 'bench/offline')], latencyCount);
  } finally {
    await broker.stop();
    await bare?.stop();
  }
  return { cairn: readStageReport(cairnTiming.file), bareNode: readStageReport(bareTiming.file) };
}

/** A server the bench measures: its MQTT port and process (for its thread times). */
export interface BenchServer { readonly port: number; readonly pid: number | undefined }

interface LatencyRun {
  /** The raw disk, fdatasync on the calling thread and on the thread pool, sampled in alternation with the latency cases. */
  readonly raw: readonly [LatencySummary, LatencySummary];
  /** Cairn's thread times in its two latency cases (no subscriber, offline subscriber). */
  readonly cairnThreads: readonly [TimedCase, TimedCase];
  /** Per broker, in the order given (Cairn first). */
  readonly results: readonly LatencyResults[];
  /** The bare servers started, measured or not (each says why not). */
  readonly bareServers: BareServers;
  /**
   * Each measured bare server's case (the no-subscriber one, or on a durable server, where every QoS 1 PUBLISH is
   * synced before its PUBACK, the durable one) with its thread times.
   */
  readonly bare: ReadonlyMap<BareServer, BareResult>;
  /** The brokers' thread times in the no-subscriber case. */
  readonly brokerNoSubThreads: readonly TimedCase[];
}

type BareServers = Awaited<ReturnType<typeof startBareServers>>;

/** A bare server's latency case and its thread times. */
interface BareResult { readonly latency: LatencySummary; readonly threads: TimedCase }

/** Which rows a run measures: CAIRN_BENCH_MQTT_CASES=latency or throughput (pub->sub, $share and fan-out) runs only those; all by default. */
function selectedCases(value: string | undefined): { readonly latency: boolean; readonly throughput: boolean } {
  if (value === undefined || value === 'all') return { latency: true, throughput: true };
  if (value === 'latency' || value === 'throughput') return { latency: value === 'latency', throughput: value === 'throughput' };
  throw new Error(`CAIRN_BENCH_MQTT_CASES is all, latency or throughput, not ${value}`);
}

/**
 * The latency cases on every broker (brokers[0] is Cairn), alternating between them and with the bare servers: the
 * no-subscriber ones in the no-subscriber case, the durable ones in the offline-subscriber case.
 */
async function runLatencyCases(brokers: readonly BenchServer[], bareServers: BareServers): Promise<LatencyRun> {
  const timed = (server: BenchServer, open: () => Promise<RoundTripCase>, into: TimedCase[]) => async (): Promise<RoundTripCase> => {
    const timedOne = timedCase(server.pid, await open());
    into.push(timedOne);
    return timedOne;
  };
  const noSubThreads: TimedCase[] = [];
  const offlineThreads: TimedCase[] = [];
  const bareThreads: TimedCase[] = [];
  const bareNoSub = bareServers.noSub.filter((server) => server.server !== undefined);
  const bareDurable = bareServers.durable.filter((server) => server.server !== undefined);
  const bareOpeners = (servers: readonly BareServer[], topic: string) =>
    servers.map(({ server }) => timed(server!, () => openSequentialQos1(server!.port, topic), bareThreads));
  const openers = [
    ...rawDiskOpeners,
    ...brokers.map((broker) => timed(broker, () => openSequentialQos1(broker.port, 'bench/nosub'), noSubThreads)),
    ...bareOpeners(bareNoSub, 'bench/nosub'),
    timed(brokers[0]!, () => openOfflineSubscriberQos1(brokers[0]!.port, 'bench/offline'), offlineThreads),
    ...brokers.slice(1).map((broker) => () => openOfflineSubscriberQos1(broker.port, 'bench/offline')),
    ...bareOpeners(bareDurable, 'bench/offline'),
  ];
  const [rawOnCallingThread, rawViaPool, ...latencies] = await interleavedCases('QoS 1 sequential, no subscriber and offline subscriber', openers, latencyCount);
  const noSubs = latencies.slice(0, brokers.length);
  const bareNoSubs = latencies.slice(brokers.length, brokers.length + bareNoSub.length);
  const offlines = latencies.slice(brokers.length + bareNoSub.length, 2 * brokers.length + bareNoSub.length);
  const bareDurables = latencies.slice(2 * brokers.length + bareNoSub.length);
  // Opened in this order, so bareThreads is in it too.
  const bareLatencies = [...bareNoSubs, ...bareDurables];
  const bareResults = new Map([...bareNoSub, ...bareDurable].map((server, i) => [server, { latency: bareLatencies[i]!, threads: bareThreads[i]! }]));
  return {
    raw: [rawOnCallingThread!, rawViaPool!],
    cairnThreads: [noSubThreads[0]!, offlineThreads[0]!],
    results: brokers.map((_, i) => ({ noSub: noSubs[i]!, offline: offlines[i]! })),
    bareServers,
    bare: bareResults,
    brokerNoSubThreads: noSubThreads,
  };
}

/** The throughput and fan-out cases on every broker, alternating between them; results in the same order. */
async function runThroughputCases(brokers: readonly BenchServer[]): Promise<ThroughputResults[]> {
  const ports = brokers.map((broker) => broker.port);
  const measured = (label: string, run: (port: number) => Promise<Throughput>): Promise<Throughput[]> =>
    medianRuns(label, brokers, (broker) => withCpuTimes(broker.pid, () => run(broker.port)));
  const qos0 = await measured('QoS 0 throughput', (port) => throughput(port, 'bench/tput0', 0));
  const qos0Windowed = await measured('QoS 0 throughput, windowed', (port) => throughput(port, 'bench/tput0w', 0, 0, 4, qos1WindowMessages));
  const qos1 = await measured('QoS 1 throughput', (port) => throughput(port, 'bench/tput1', 1, 0, 4, qos1WindowMessages));
  const shared = await measured(`QoS 1 shared subscription, ${sharedMembers} members`, (port) => throughput(port, 'bench/shared1', 1, sharedMembers, 4, qos1WindowMessages));
  const qos1v5 = await measured('QoS 1 throughput, MQTT 5 with user properties', (port) => throughput(port, 'bench/tput1v5', 1, 0, 5, qos1WindowMessages));
  const sharedV5 = await measured(`QoS 1 shared subscription, ${sharedMembers} members, MQTT 5 with user properties`, (port) => throughput(port, 'bench/shared1v5', 1, sharedMembers, 5, qos1WindowMessages));
  const fanOut0 = await medianRuns(`QoS 0 fan-out to ${fanOutSubscribers} subscribers`, ports, (port) => fanOut(port, 'bench/fan0', 0));
  const fanOut1 = await medianRuns(`QoS 1 fan-out to ${fanOutSubscribers} subscribers`, ports, (port) => fanOut(port, 'bench/fan1', 1));
  return ports.map((_, i) => ({
    qos0: qos0[i]!, qos0Windowed: qos0Windowed[i]!, qos1: qos1[i]!, shared: shared[i]!, qos1v5: qos1v5[i]!, sharedV5: sharedV5[i]!, fanOut0: fanOut0[i]!, fanOut1: fanOut1[i]!,
  }));
}

export async function benchMqtt(): Promise<void> {
  const cases = selectedCases(process.env['CAIRN_BENCH_MQTT_CASES']);
  let latency: LatencyRun | undefined;
  let throughputs: ThroughputResults[] | undefined;
  let stages: StageReports | undefined;

  const cairnData = tempDir('cairn-bench-mqtt-');
  // The bare servers' files: the durable ones' publishes, and the compiled C server.
  const bareDir = tempDir('cairn-bench-bare-');
  const stageDir = tempDir('cairn-bench-stages-');
  const mosquittoDir = tempDir('cairn-bench-mosquitto-');
  const mosquittoNote = commandExists('mosquitto')
    ? 'Mosquitto: persistence true (a snapshot at exit and every autosave_interval, never a per-message fsync), set_tcp_nodelay true; both brokers run side by side and each case alternates between them.'
    : 'mosquitto not installed: Mosquitto column skipped.';
  try {
    // The measured broker runs without stage timing: its marks cost ~6,000 instructions per round trip (a quarter of one).
    const broker = await startCairn(cairnData.dir);
    let other: (BenchServer & { stop(): Promise<void> }) | undefined;
    const bareProcesses: BareServerProcess[] = [];
    try {
      if (commandExists('mosquitto')) other = await startMosquitto(mosquittoDir.dir);
      const cairnServer = { port: broker.mqttPort, pid: broker.child.pid };
      const brokers = other === undefined ? [cairnServer] : [cairnServer, other];
      if (cases.latency) latency = await runLatencyCases(brokers, await startBareServers(bareDir.dir, bareProcesses));
      if (cases.throughput) throughputs = await runThroughputCases(brokers);
    } finally {
      await broker.stop();
      await other?.stop();
      for (const server of bareProcesses) await server.stop();
    }
    if (cases.latency) stages = await stagesOfSequentialCases(stageDir.dir);
  } finally {
    stageDir.remove();
    cairnData.remove();
    bareDir.remove();
    mosquittoDir.remove();
  }

  const rows: string[][] = [['case', 'Cairn', 'Mosquitto', 'Cairn/Mosquitto']];
  if (latency !== undefined) rows.push(...latencyRows(latency));
  if (throughputs !== undefined) rows.push(...throughputRows(throughputs));
  if (latency !== undefined) rows.push(...durableTargetRowsOf(latency));

  console.log(`MQTT: ${latencyCount} sequential publishes per latency case (after ${warmUpPublishes} unmeasured, offline subscriber: ${sessionWarmUpRounds + 1} x ${sessionWarmUpPublishes}; raw disk, Cairn and Mosquitto cases alternate), ${throughputCount} x 100 B per throughput case (median of ${throughputRuns}); disk: ${benchBaseDir()}${cases.latency && cases.throughput ? '' : `; only the ${cases.latency ? 'latency' : 'throughput'} rows (CAIRN_BENCH_MQTT_CASES)`}`);
  printTable(rows);
  console.log(`Latency ratios > 1: Cairn slower; throughput ratios > 1: Cairn faster. Offline-sub case is Cairn's durable path (fsync per publish).`);
  if (throughputs !== undefined) console.log('CPU per msg (throughput rows, the median run): every thread of the broker process, and the bench process (the MQTT.js publisher and subscribers); where the client spends more than the broker, the rate is mostly the client\'s.');
  console.log(mosquittoNote);
  if (stages?.cairn === undefined) return;
  console.log('Cairn, per stage of one sequential QoS 1 round trip (src/stage-timing.ts; a second broker after the measured cases, with stage timing on, its offline-sub case alternating with the bare durable Node server\'s, timed the same way; sync submitted -> sync done is the fdatasync, on the thread pool with the hops to it and back, or on the event loop, where a lone batch is written and synced by one O_DSYNC pwrite and marks no \'written\'):');
  printTable(stageRows(stages.cairn, latency!.raw[0].p99, stages.bareNode?.durable));
}

const ms = (value: number): string => `${fmt(value, 3)} ms`;

const ratio = (a: number, b: number | undefined): string => (b === undefined || !(b > 0) ? '-' : `${fmt(a / b)}x`);

function rate(t: Throughput): string {
  const cpu = `${t.brokerCpuUs === undefined ? '' : `; CPU per msg: broker ${fmt(t.brokerCpuUs, 1)} us`}${t.clientCpuUs === undefined ? '' : `, client ${fmt(t.clientCpuUs, 1)} us`}`;
  return `${Math.round(t.rate).toLocaleString('en-US')} msg/s (rcvd ${t.received}/${throughputCount}${Number.isNaN(t.acked) ? '' : `, acked ${t.acked}`}${cpu})`;
}

/** The raw disk, the brokers' and the bare servers' latency rows, with their CPU per round trip. */
function latencyRows(run: LatencyRun): string[][] {
  const rows: string[][] = [];
  const [cairn, mosquitto] = run.results as [LatencyResults, LatencyResults | undefined];
  for (const [label, value] of rawDiskRows(...run.raw)) rows.push([label, value, '', '']);
  const latencyRow = (label: string, pick: (r: LatencyResults) => number): void => {
    rows.push([label, ms(pick(cairn)), mosquitto ? ms(pick(mosquitto)) : 'skipped', ratio(pick(cairn), mosquitto && pick(mosquitto))]);
  };
  latencyRow('QoS 1 seq publish, no subscriber p50', (r) => r.noSub.p50);
  latencyRow('QoS 1 seq publish, no subscriber p99', (r) => r.noSub.p99);
  // The floors: bare servers that only answer (Node: bare-puback-server.ts, C: bare-puback-server.c), same client,
  // alternating with the brokers; the C one's gap to the Node one is Node's.
  const bareRow = (server: BareServer, labelEnd: string, cells: (latency: LatencySummary) => [string, string]): void => {
    const result = run.bare.get(server);
    if (result === undefined) {
      rows.push([`  the same on a ${server.label}: p50 / p99`, `not measured: ${server.why ?? 'unknown'}`, '', '']);
      return;
    }
    const [value, against] = cells(result.latency);
    rows.push([`  the same on a ${server.label}: p50 / p99${labelEnd}`, value, '', against]);
  };
  for (const server of run.bareServers.noSub) {
    bareRow(server, '', ({ p50, p99 }) => [`${ms(p50)} / ${ms(p99)}`, `${ratio(p50, mosquitto?.noSub.p50)} / ${ratio(p99, mosquitto?.noSub.p99)}`]);
  }
  const cpu = (server: BareServer, pick: (times: NonNullable<ReturnType<TimedCase['perRoundTrip']>>) => number): string => {
    const times = run.bare.get(server)?.threads.perRoundTrip();
    return times === undefined ? '-' : `${fmt(pick(times), 1)} us`;
  };
  const brokerLoopCpu = (threads: TimedCase): string => {
    const times = threads.perRoundTrip();
    return times === undefined ? '-' : `${fmt(times.loopRunUs, 1)} us`;
  };
  const [bareData, bareDirect, bareC] = run.bareServers.noSub;
  rows.push([
    `  CPU per no-subscriber round trip, event loop (main thread): Cairn | bare Node 'data' | bare Node direct; every thread: bare C`,
    `${[brokerLoopCpu(run.brokerNoSubThreads[0]!), cpu(bareData!, (t) => t.loopRunUs), cpu(bareDirect!, (t) => t.loopRunUs)].join(' | ')}; ${cpu(bareC!, (t) => t.loopRunUs + t.otherRunUs)}`,
    run.brokerNoSubThreads[1] === undefined ? 'skipped' : brokerLoopCpu(run.brokerNoSubThreads[1]),
    '',
  ]);
  latencyRow('QoS 1 seq publish, offline persistent sub p50', (r) => r.offline.p50);
  latencyRow('QoS 1 seq publish, offline persistent sub p99', (r) => r.offline.p99);
  // The durable floors: the same client's publishes to bare servers that sync each one (one O_DSYNC pwrite) before
  // its PUBACK, alternating with the brokers' durable case.
  for (const server of run.bareServers.durable) {
    bareRow(server, '; Cairn / bare', ({ p50, p99 }) => [`${ms(p50)} / ${ms(p99)}; ${ratio(cairn.offline.p50, p50)} / ${ratio(cairn.offline.p99, p99)}`, '']);
  }
  return rows;
}

/** The pub->sub, $share and fan-out rows. */
function throughputRows(results: readonly ThroughputResults[]): string[][] {
  const rows: string[][] = [];
  const [cairn, mosquitto] = results as [ThroughputResults, ThroughputResults | undefined];
  const throughputRow = (label: string, pick: (r: ThroughputResults) => Throughput): void => {
    rows.push([label, rate(pick(cairn)), mosquitto ? rate(pick(mosquitto)) : 'skipped', ratio(pick(cairn).rate, mosquitto && pick(mosquitto).rate)]);
  };
  const ahead = `<= ${qos1WindowMessages} ahead`;
  throughputRow('QoS 0 pub->sub throughput', (r) => r.qos0);
  throughputRow(`QoS 0 pub->sub throughput, ${ahead}`, (r) => r.qos0Windowed);
  throughputRow(`QoS 1 pub->sub throughput, ${ahead}`, (r) => r.qos1);
  throughputRow(`QoS 1 pub->$share (${sharedMembers} members) throughput, ${ahead}`, (r) => r.shared);
  throughputRow(`MQTT 5 QoS 1 pub->sub, 2 user properties, ${ahead}`, (r) => r.qos1v5);
  throughputRow(`MQTT 5 QoS 1 pub->$share (${sharedMembers} members), 2 user properties, ${ahead}`, (r) => r.sharedV5);
  const fanOutRow = (label: string, pick: (r: ThroughputResults) => FanOut): void => {
    rows.push([label, fanOutCell(pick(cairn)), mosquitto ? fanOutCell(pick(mosquitto)) : 'skipped', ratio(pick(cairn).rate, mosquitto && pick(mosquitto).rate)]);
  };
  const fanOutLabel = `fan-out, 1 publisher -> ${fanOutSubscribers} subscribers x ${fanOutMessages}, <= ${fanOutWindowMessages} ahead of the slowest (deliveries/s)`;
  fanOutRow(`QoS 0 ${fanOutLabel}`, (r) => r.fanOut0);
  fanOutRow(`QoS 1 ${fanOutLabel}`, (r) => r.fanOut1);
  return rows;
}

/** The durable round trip's target, for Cairn and for each bare durable server, and Cairn's thread times per round trip. */
function durableTargetRowsOf(run: LatencyRun): string[][] {
  const rows: string[][] = [];
  const cairn = run.results[0]!;
  for (const [label, value] of durableTargetRows(run.raw, cairn.noSub, cairn.offline)) rows.push([`${label} (no sub / offline sub)`, value, '', '']);
  // The same target for each bare durable server against its no-subscriber counterpart's round trip: what this
  // machine allows a server that does nothing but the O_DSYNC write and the PUBACK, in Node and in C.
  for (const server of run.bareServers.durable) {
    const durable = run.bare.get(server);
    const nonDurable = server.nonDurable === undefined ? undefined : run.bare.get(server.nonDurable);
    const name = `${server.name} / ${server.nonDurable?.name ?? '-'}`;
    if (durable === undefined || nonDurable === undefined) {
      rows.push([`  the same, ${name}`, `not measured: ${server.why ?? 'unknown'}`, '', '']);
      continue;
    }
    for (const [label, value] of durableTargetRows(run.raw, nonDurable.latency, durable.latency)) rows.push([`  ${label}, ${name}`, value, '', '']);
  }
  for (const [label, value] of threadTimeRow('Cairn, no subscriber', run.cairnThreads[0].perRoundTrip())) rows.push([label, value, '', '']);
  for (const [label, value] of threadTimeRow('Cairn, offline persistent sub', run.cairnThreads[1].perRoundTrip())) rows.push([label, value, '', '']);
  return rows;
}
