/**
 * `npm run bench -- ha`: the log replicated by NATS JetStream (issue 17) beside
 * the file log, on a three-node nats-server cluster on loopback started for it
 * (tools/nats-cluster.ts; stream R3, file storage):
 *
 * - durable append latency p50/p99: one appender in a closed loop (append one
 *   record, wait for its durability promise: the file log's fdatasync,
 *   JetStream's ack from a quorum), which is what one publisher waiting for
 *   each PUBACK or confirm sees;
 * - pipelined throughput: 256 appenders in closed loops (records/s), with
 *   this process's CPU time per record and, on JetStream, how many records
 *   one stream message carried (the log batches them);
 * - the same through the broker: AMQP publisher confirms, pipelined over 8
 *   connections into durable queues, on Cairn with the file log, on Cairn
 *   with the JetStream log, and on a RabbitMQ quorum queue (one private node,
 *   when rabbitmq-server is installed: a quorum queue is RabbitMQ's
 *   replicated queue; one node is its floor, as loopback is JetStream's here);
 *   median of three alternating runs;
 * - takeover: `cairn serve --log nats://…` leader + standby, the leader
 *   SIGKILLed CAIRN_BENCH_HA_FAILOVERS times (default 20); the time from the
 *   kill to the standby's ready line, p50 and max, with --lease-ttl
 *   CAIRN_BENCH_HA_LEASE_TTL (default 2s).
 *
 * Records carry a 100-byte payload (a small message). All three servers and
 * the brokers share this machine's cores, so the figures are a floor for
 * three machines, not a forecast.
 */
import mqtt from 'mqtt';
import { SegmentedLog, type AppendRecord } from '../src/log/index.js';
import { jetstreamManager } from '@nats-io/jetstream';
import { JetStreamLog } from '../src/log/jetstream/jetstream-log.js';
import { connectToNats } from '../src/log/jetstream/nats-connection.js';
import { pipelined } from './bench-amqp.js';
import { medianRuns, throughputRuns } from './bench-side-by-side.js';
import { startCairnProcess, tempDataDir, type CairnProcess } from './cairn-process.js';
import { maybeStartRabbit } from './rabbitmq-process.js';
import { startNatsCluster, type NatsCluster } from './nats-cluster.js';

const caseMs = 3000;
const pipelinedAppenders = 256;
const failovers = Number(process.env['CAIRN_BENCH_HA_FAILOVERS'] ?? 20);
const leaseTtl = process.env['CAIRN_BENCH_HA_LEASE_TTL'] ?? '2s';

interface AppendLog {
  append(records: readonly AppendRecord[]): Promise<number[]>;
}

const record = (n: number): AppendRecord => ({ kind: 3, timestamp: Date.now(), body: { n, payload: new Uint8Array(100).fill(n & 0xff) } });

function percentile(sorted: readonly number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** `appenders` closed loops for caseMs: records/s, each append's latency in ms, and this process's CPU time (all threads) per record in µs. */
async function measure(log: AppendLog, appenders: number): Promise<{ records: number; perSecond: number; latencies: number[]; cpuMicrosPerRecord: number }> {
  const latencies: number[] = [];
  let records = 0;
  const deadline = performance.now() + caseMs;
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  await Promise.all(Array.from({ length: appenders }, async () => {
    while (performance.now() < deadline) {
      const begun = performance.now();
      await log.append([record(records)]);
      latencies.push(performance.now() - begun);
      records++;
    }
  }));
  const cpu = process.cpuUsage(cpuBefore);
  return { records, perSecond: records / ((performance.now() - started) / 1000), latencies: latencies.sort((a, b) => a - b), cpuMicrosPerRecord: (cpu.user + cpu.system) / records };
}

async function benchLogs(cluster: NatsCluster): Promise<void> {
  const directory = tempDataDir('cairn-bench-ha-');
  const fileLog = await SegmentedLog.open({ dir: directory.dir });
  const connection = await connectToNats({ servers: cluster.servers.split(','), stream: 'bench-ha', tls: false });
  const jetStreamLog = await JetStreamLog.open({ address: { servers: cluster.servers.split(','), stream: 'bench-ha', tls: false }, connection });
  try {
    console.log('log            durable p50   durable p99   pipelined (256 appenders)');
    const streamMessages = async (): Promise<number> => (await (await jetstreamManager(connection)).streams.info('bench-ha')).state.messages;
    for (const [name, log] of [['file', fileLog], ['JetStream R3', jetStreamLog]] as const) {
      await measure(log, 1); // warm-up
      const lone = await measure(log, 1);
      const messagesBefore = log === jetStreamLog ? await streamMessages() : 0;
      const pipelined = await measure(log, pipelinedAppenders);
      // The JetStream log batches records into stream messages: how many records one message carried.
      const batching = log === jetStreamLog ? `, ${(pipelined.records / (await streamMessages() - messagesBefore)).toFixed(1)} records a stream message` : '';
      console.log(`${name.padEnd(14)} ${percentile(lone.latencies, 50).toFixed(2).padStart(8)} ms   ${percentile(lone.latencies, 99).toFixed(2).padStart(8)} ms   ${Math.round(pipelined.perSecond).toString().padStart(8)} records/s (p50 ${percentile(pipelined.latencies, 50).toFixed(1)} ms, this process's CPU ${pipelined.cpuMicrosPerRecord.toFixed(1)} us a record${batching})`);
    }
  } finally {
    await fileLog.close();
    await jetStreamLog.close();
    await connection.close();
    directory.remove();
  }
}

const brokerMessages = 10_000;
const brokerConnections = 8;

/** AMQP pipelined confirms through Cairn (file log, JetStream log) and a RabbitMQ quorum queue, alternating. */
async function benchBrokers(cluster: NatsCluster): Promise<void> {
  const directories = [tempDataDir('cairn-bench-ha-file-'), tempDataDir('cairn-bench-ha-js-'), tempDataDir('cairn-bench-ha-rabbit-')];
  const stops: Array<() => Promise<void>> = [];
  try {
    const quiet = ['--http-port', 'off', '--mqtt-port', 'off'];
    const onFile = await startCairnProcess(directories[0]!.dir, quiet);
    stops.push(() => onFile.stop());
    const onJetStream = await startCairnProcess(directories[1]!.dir, [...quiet, '--log', `nats://${cluster.servers}/bench-broker`]);
    stops.push(() => onJetStream.stop());
    const { rabbit, note } = await maybeStartRabbit(directories[2]!.dir, 'quorum queues (x-queue-type quorum), one node, no plugins');
    if (rabbit !== undefined) stops.push(() => rabbit.stop());
    const targets: Array<{ name: string; url: string; queueArguments: Record<string, unknown> }> = [
      { name: 'Cairn, file log', url: `amqp://127.0.0.1:${onFile.amqpPort}`, queueArguments: {} },
      { name: 'Cairn, JetStream R3', url: `amqp://127.0.0.1:${onJetStream.amqpPort}`, queueArguments: {} },
      ...(rabbit === undefined ? [] : [{ name: 'RabbitMQ quorum queue', url: `amqp://127.0.0.1:${rabbit.port}`, queueArguments: { 'x-queue-type': 'quorum' } }]),
    ];
    const rates = await medianRuns('pipelined confirms', targets, (target) => pipelined(target.url, brokerConnections, brokerMessages, target.queueArguments));
    console.log(`AMQP publisher confirms, ${brokerMessages} x 100 B persistent, pipelined over ${brokerConnections} connections (median of ${throughputRuns}); ${note}`);
    targets.forEach((target, i) => console.log(`  ${target.name.padEnd(24)} ${Math.round(rates[i]!).toString().padStart(8)} msg/s`));
    const jetStream = rates[1]!;
    const quorum = rates[2];
    if (quorum !== undefined) console.log(`  Cairn on JetStream / RabbitMQ quorum queue: ${(jetStream / quorum).toFixed(2)}x (target: >= 1)`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    for (const directory of directories) directory.remove();
  }
}

/** A `cairn serve --log` node; resolves once it serves (a standby: once it took over). `lines` fill from the start. */
function serve(cluster: NatsCluster, lines: string[], readyTimeoutMs: number): { ready: Promise<CairnProcess>; remove(): void } {
  const data = tempDataDir('cairn-bench-ha-node-');
  const args = ['--log', `nats://${cluster.servers}/bench-failover`, '--lease-ttl', leaseTtl, '--http-port', 'off', '--amqp-port', 'off'];
  return { ready: startCairnProcess(data.dir, args, {}, readyTimeoutMs, lines), remove: () => data.remove() };
}

async function waitForLine(lines: readonly string[], text: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!lines.some((line) => line.includes(text))) {
    if (Date.now() > deadline) throw new Error(`no "${text}" line within 30 s:\n${lines.join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function benchTakeover(cluster: NatsCluster): Promise<void> {
  const removers: Array<() => void> = [];
  const first = serve(cluster, [], 30_000);
  removers.push(first.remove);
  let leader = await first.ready;
  const takeovers: number[] = [];
  try {
    for (let round = 1; round <= failovers; round++) {
      const lines: string[] = [];
      const standby = serve(cluster, lines, 120_000);
      removers.push(standby.remove);
      await waitForLine(lines, 'standby: another node writes the log');
      // One acknowledged publish per round: the log grows, and the leader really serves.
      const client = await mqtt.connectAsync({ host: '127.0.0.1', port: leader.mqttPort, clientId: `bench-${round}`, reconnectPeriod: 0 });
      await client.publishAsync('bench/ha', `round-${round}`, { qos: 1 });
      await client.endAsync(true);
      const killedAt = performance.now();
      await leader.kill();
      leader = await standby.ready;
      takeovers.push(performance.now() - killedAt);
    }
  } finally {
    await leader.kill();
    for (const remove of removers) remove();
  }
  const sorted = [...takeovers].sort((a, b) => a - b);
  console.log(`takeover over ${failovers} failovers (--lease-ttl ${leaseTtl}, SIGKILL to the standby's ready line): p50 ${Math.round(percentile(sorted, 50))} ms, max ${Math.round(sorted.at(-1)!)} ms (target: <= 5000 ms)`);
}

export async function benchHa(): Promise<void> {
  const cluster = await startNatsCluster();
  try {
    await benchLogs(cluster);
    await benchBrokers(cluster);
    await benchTakeover(cluster);
  } finally {
    await cluster.stop();
  }
}
