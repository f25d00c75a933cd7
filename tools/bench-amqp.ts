/**
 * AMQP 0-9-1 benchmark against Cairn (child process, amqplib client), 100-byte
 * bodies, durable queues and persistent messages throughout:
 *   - publisher confirms, pipelined: 10,000 messages on one connection, and
 *     10,000 split over 8 connections in parallel (one queue each), then
 *     waitForConfirms;
 *   - sequential confirm latency: 2,000 publishes, each awaiting its confirm,
 *     transient into a non-durable queue and persistent into a durable one,
 *     alternating with a raw write(100 B) + fdatasync on the same disk
 *     (bench-durable-floor.ts: the durable round trip against its target);
 *   - end-to-end throughput publisher → consumer (10,000, manual ack,
 *     prefetch 100), timed from the first publish to the last delivery;
 *   - end-to-end latency: 2,000 sequential publish → deliver round trips;
 *   - the retry-queue cycle (publish → reject → DLX → TTL → back;
 *     bench-retry-cycle.ts): 2,000 messages, 5 retries each;
 *   - transactional publish: 10,000 messages on a tx.select channel, a
 *     tx.commit after every 100 (bench-amqp-transactions.ts).
 * Latency cases use TCP_NODELAY in the client (see latencySocket).
 * Every case first runs unmeasured (the same for both brokers); throughput
 * figures are the median of three measured runs, latency samples are taken
 * in five slices.
 * When `rabbitmq-server` is on PATH the same cases run against a private
 * RabbitMQ (own node name, ports, epmd, data, logs and cookie in a temp dir,
 * no plugins), started beside Cairn and stopped afterwards; each case
 * alternates between the two brokers (the machine's disk and CPU drift from
 * minute to minute), and the table shows Cairn/RabbitMQ ratios.
 * Nothing is installed here: without RabbitMQ its column is skipped.
 * Data lives in a temp dir (CAIRN_BENCH_DIR picks the disk), removed afterwards.
 */
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import { benchBaseDir, fmt, printTable, startCairn, tempDir } from './bench-mqtt.js';
import { durableTargetRows, rawDiskOpeners, rawDiskRows, threadTimeRow } from './bench-durable-floor.js';
import { timedCase, type TimedCase } from './bench-thread-times.js';
import { maybeStartRabbit } from './rabbitmq-process.js';
import { cyclesPerMessage, retryCycle, retryMessages } from './bench-retry-cycle.js';
import { transactionalPublish } from './bench-amqp-transactions.js';
import { interleavedCases, interleavedLatency, medianRuns, throughputRuns, timeRoundTrips, type LatencySummary, type RoundTripCase } from './bench-side-by-side.js';

const body = Buffer.alloc(100, 0x62);
const pipelinedCount = 10_000;
const connectionsParallel = 8;
const latencyCount = 2000;
// Latency cases turn Nagle's algorithm off in the client, as the RabbitMQ Java client and pika do by
// default (amqplib leaves it on). With it on, a publish sent right after a delivery waits in the
// client for the TCP ACK of the previous publish, which the broker's kernel sends with its next reply,
// the confirm: the end-to-end row would measure confirm latency (an fdatasync for Cairn; RabbitMQ
// confirms a message its consumer already acked without writing it).
const latencySocket = { noDelay: true };
// Unmeasured round trips before each latency case, the same for both brokers: a JIT-compiled broker
// (and the amqplib client) runs partly unoptimised code for its first few thousand; the rows measure a
// broker that has been running, as a production one has.
const warmUpRoundTrips = 10_000;
const e2eCount = 10_000;
const transactionalCount = 10_000;
const transactionBatch = 100;
const prefetch = 100;

async function sendWithBackpressure(channel: ConfirmChannel, queue: string): Promise<void> {
  if (!channel.sendToQueue(queue, body, { persistent: true })) {
    await new Promise<void>((done) => channel.once('drain', () => done()));
  }
}

export async function pipelined(url: string, connections: number, total: number, queueArguments: Record<string, unknown> = {}): Promise<number> {
  const models: ChannelModel[] = [];
  try {
    const channels: Array<{ channel: ConfirmChannel; queue: string }> = [];
    for (let i = 0; i < connections; i++) {
      const model = await amqp.connect(url);
      models.push(model);
      const channel = await model.createConfirmChannel();
      const queue = `bench.pipelined.${connections}.${i}`;
      await channel.assertQueue(queue, { durable: true, arguments: queueArguments });
      await channel.purgeQueue(queue);
      channels.push({ channel, queue });
    }
    const perConnection = Math.ceil(total / connections);
    const started = performance.now();
    await Promise.all(channels.map(async ({ channel, queue }) => {
      for (let i = 0; i < perConnection; i++) await sendWithBackpressure(channel, queue);
      await channel.waitForConfirms();
    }));
    const seconds = (performance.now() - started) / 1000;
    for (const { channel, queue } of channels) await channel.deleteQueue(queue);
    return (perConnection * connections) / seconds;
  } finally {
    for (const model of models) await model.close().catch(() => undefined);
  }
}

/**
 * Sequential publishes, each awaiting its confirm: persistent into a durable queue (Cairn writes and
 * fdatasyncs before the confirm), or transient into a non-durable one (nothing is written: the
 * round trip without the disk).
 */
export async function openSequentialConfirms(url: string, durable: boolean): Promise<RoundTripCase> {
  const model = await amqp.connect(url, latencySocket);
  const channel = await model.createConfirmChannel();
  const queue = durable ? 'bench.sequential' : 'bench.sequential.transient';
  await channel.assertQueue(queue, { durable });
  const publishOne = (): Promise<void> => new Promise((done, reject) => {
    channel.sendToQueue(queue, body, { persistent: durable }, (error) => (error ? reject(error) : done()));
  });
  for (let i = 0; i < warmUpRoundTrips; i++) await publishOne();
  return {
    sample: (count) => timeRoundTrips(count, publishOne),
    close: async () => {
      await channel.deleteQueue(queue);
      await model.close().catch(() => undefined);
    },
  };
}

async function endToEndThroughput(url: string): Promise<{ rate: number; received: number }> {
  const publisherModel = await amqp.connect(url);
  const consumerModel = await amqp.connect(url);
  try {
    const queue = 'bench.e2e.throughput';
    const publisher = await publisherModel.createConfirmChannel();
    await publisher.assertQueue(queue, { durable: true });
    await publisher.purgeQueue(queue);
    const consumer = await consumerModel.createChannel();
    await consumer.prefetch(prefetch);
    let received = 0;
    let lastAt = 0;
    let done: () => void = () => undefined;
    const all = new Promise<void>((resolvePromise) => { done = resolvePromise; });
    await consumer.consume(queue, (message) => {
      if (message === null) return;
      consumer.ack(message);
      received++;
      lastAt = performance.now();
      if (received === e2eCount) done();
    }, { noAck: false });
    const started = performance.now();
    for (let i = 0; i < e2eCount; i++) await sendWithBackpressure(publisher, queue);
    await publisher.waitForConfirms();
    await all;
    await publisher.deleteQueue(queue);
    return { rate: received / ((lastAt - started) / 1000), received };
  } finally {
    await publisherModel.close().catch(() => undefined);
    await consumerModel.close().catch(() => undefined);
  }
}

async function openEndToEndLatency(url: string): Promise<RoundTripCase> {
  const publisherModel = await amqp.connect(url, latencySocket);
  const consumerModel = await amqp.connect(url, latencySocket);
  const queue = 'bench.e2e.latency';
  const publisher = await publisherModel.createConfirmChannel();
  await publisher.assertQueue(queue, { durable: true });
  await publisher.purgeQueue(queue);
  const consumer = await consumerModel.createChannel();
  await consumer.prefetch(prefetch);
  let delivered: (() => void) | undefined;
  await consumer.consume(queue, (message) => {
    if (message === null) return;
    consumer.ack(message);
    delivered?.();
  }, { noAck: false });
  const roundTrip = (): Promise<void> => new Promise((done) => {
    delivered = done;
    publisher.sendToQueue(queue, body, { persistent: true });
  });
  for (let i = 0; i < warmUpRoundTrips; i++) await roundTrip();
  return {
    sample: (count) => timeRoundTrips(count, roundTrip),
    close: async () => {
      await publisher.waitForConfirms();
      await publisher.deleteQueue(queue);
      await publisherModel.close().catch(() => undefined);
      await consumerModel.close().catch(() => undefined);
    },
  };
}

interface AmqpResults {
  readonly pipelinedOne: number;
  readonly transient: LatencySummary;
  readonly pipelinedMany: number;
  readonly sequential: LatencySummary;
  readonly endToEnd: { rate: number; received: number };
  readonly endToEndLatency: LatencySummary;
  readonly retryCycle: { rate: number; passes: number };
  readonly transactional: number;
}

interface AmqpRun {
  /** The raw disk, fdatasync on the calling thread and on the thread pool, sampled in alternation with the sequential confirms. */
  readonly raw: readonly [LatencySummary, LatencySummary];
  /** Cairn's thread times in its sequential confirm cases (transient, durable). */
  readonly cairnThreads: readonly [TimedCase, TimedCase];
  readonly results: AmqpResults[];
}

/** Every case on every broker (urls[0] is Cairn, its process `cairnPid`); results in the same order. */
async function runCases(urls: readonly string[], cairnPid: number | undefined): Promise<AmqpRun> {
  const pipelinedOne = await medianRuns('pipelined x1', urls, (url) => pipelined(url, 1, pipelinedCount));
  const pipelinedMany = await medianRuns(`pipelined x${connectionsParallel}`, urls, (url) => pipelined(url, connectionsParallel, pipelinedCount));
  const cairnThreads: TimedCase[] = [];
  const sequentialOpener = (url: string, index: number, durable: boolean) => async (): Promise<RoundTripCase> => {
    const opened = await openSequentialConfirms(url, durable);
    if (index !== 0) return opened;
    const timed = timedCase(cairnPid, opened);
    cairnThreads.push(timed);
    return timed;
  };
  const openers = [
    ...rawDiskOpeners,
    ...urls.map((url, i) => sequentialOpener(url, i, false)),
    ...urls.map((url, i) => sequentialOpener(url, i, true)),
  ];
  const [rawOnCallingThread, rawViaPool, ...sequential] = await interleavedCases('sequential confirms, transient and durable', openers, latencyCount);
  const endToEnd = await medianRuns('end-to-end throughput', urls, endToEndThroughput);
  const endToEndRoundTrips = await interleavedLatency('end-to-end latency', urls, latencyCount, openEndToEndLatency);
  const retry = await medianRuns('retry-queue cycle', urls, retryCycle);
  const transactional = await medianRuns('transactional publish', urls, (url) => transactionalPublish(url, transactionalCount, transactionBatch, body));
  const results = urls.map((_, i) => ({
    pipelinedOne: pipelinedOne[i]!, pipelinedMany: pipelinedMany[i]!, transient: sequential[i]!, sequential: sequential[urls.length + i]!,
    endToEnd: endToEnd[i]!, endToEndLatency: endToEndRoundTrips[i]!, retryCycle: retry[i]!, transactional: transactional[i]!,
  }));
  return { raw: [rawOnCallingThread!, rawViaPool!], cairnThreads: cairnThreads as [TimedCase, TimedCase], results };
}

export async function benchAmqp(): Promise<void> {
  let raw: AmqpRun['raw'];
  let cairnThreads: AmqpRun['cairnThreads'];
  const data = tempDir('cairn-bench-amqp-');
  const rabbitDir = tempDir('cairn-bench-rabbitmq-');
  let cairn: AmqpResults;
  let rabbitResults: AmqpResults | undefined;
  let note: string;
  try {
    const broker = await startCairn(data.dir);
    const started = await maybeStartRabbit(rabbitDir.dir, 'default classic queues, no plugins, data on the same disk; both brokers run side by side and each case alternates between them.');
    note = started.note;
    try {
      const urls = [`amqp://127.0.0.1:${broker.amqpPort}`];
      if (started.rabbit !== undefined) urls.push(`amqp://127.0.0.1:${started.rabbit.port}`);
      const measured = await runCases(urls, broker.child.pid);
      raw = measured.raw;
      cairnThreads = measured.cairnThreads;
      [cairn, rabbitResults] = measured.results as [AmqpResults, AmqpResults | undefined];
    } finally {
      await broker.stop();
      await started.rabbit?.stop();
    }
  } finally {
    data.remove();
    rabbitDir.remove();
  }

  const rate = (value: number): string => `${Math.round(value).toLocaleString('en-US')} msg/s`;
  const ms = (value: number): string => `${fmt(value, 3)} ms`;
  const ratio = (a: number, b: number | undefined): string => (b === undefined || !(b > 0) ? '-' : `${fmt(a / b)}x`);
  const rows: string[][] = [['case (durable queue, persistent, 100 B)', 'Cairn', 'RabbitMQ', 'Cairn/RabbitMQ']];
  for (const [label, value] of rawDiskRows(...raw)) rows.push([label, value, '', '']);
  const row = (label: string, pick: (r: AmqpResults) => number, show: (r: AmqpResults) => string): void => {
    const other = rabbitResults;
    rows.push([label, show(cairn), other ? show(other) : 'skipped', ratio(pick(cairn), other && pick(other))]);
  };
  row(`confirms pipelined, 1 connection (${pipelinedCount}, median of ${throughputRuns})`, (r) => r.pipelinedOne, (r) => rate(r.pipelinedOne));
  row(`confirms pipelined, ${connectionsParallel} connections (${pipelinedCount} total, median of ${throughputRuns})`, (r) => r.pipelinedMany, (r) => rate(r.pipelinedMany));
  row(`sequential confirm latency, transient, non-durable queue p50 (${latencyCount}, nodelay)`, (r) => r.transient.p50, (r) => ms(r.transient.p50));
  row(`sequential confirm latency, transient, non-durable queue p99 (${latencyCount}, nodelay)`, (r) => r.transient.p99, (r) => ms(r.transient.p99));
  row(`sequential confirm latency p50 (${latencyCount}, nodelay)`, (r) => r.sequential.p50, (r) => ms(r.sequential.p50));
  row(`sequential confirm latency p99 (${latencyCount}, nodelay)`, (r) => r.sequential.p99, (r) => ms(r.sequential.p99));
  for (const [label, value] of durableTargetRows(raw, cairn.transient, cairn.sequential)) rows.push([`${label} (transient / sequential confirm)`, value, '', '']);
  for (const [label, value] of threadTimeRow('Cairn, transient confirm', cairnThreads[0].perRoundTrip())) rows.push([label, value, '', '']);
  for (const [label, value] of threadTimeRow('Cairn, durable confirm', cairnThreads[1].perRoundTrip())) rows.push([label, value, '', '']);
  row(`end-to-end throughput (${e2eCount}, ack, prefetch ${prefetch}, median of ${throughputRuns})`, (r) => r.endToEnd.rate, (r) => `${rate(r.endToEnd.rate)} (${r.endToEnd.received}/${e2eCount})`);
  row(`end-to-end latency p50 (${latencyCount} sequential, nodelay)`, (r) => r.endToEndLatency.p50, (r) => ms(r.endToEndLatency.p50));
  row(`end-to-end latency p99 (${latencyCount} sequential, nodelay)`, (r) => r.endToEndLatency.p99, (r) => ms(r.endToEndLatency.p99));
  const retryPasses = retryMessages * (cyclesPerMessage + 1);
  row(`retry-queue cycle, publish → reject → DLX → TTL → back (${retryMessages} x ${cyclesPerMessage} retries, passes/s, median of ${throughputRuns})`,
    (r) => r.retryCycle.rate, (r) => `${rate(r.retryCycle.rate)} (${r.retryCycle.passes}/${retryPasses})`);
  row(`transactional publish, tx.commit every ${transactionBatch} (${transactionalCount}, median of ${throughputRuns})`, (r) => r.transactional, (r) => rate(r.transactional));

  console.log(`AMQP (amqplib), 100-byte bodies, durable queues, persistent messages; disk: ${benchBaseDir()}`);
  printTable(rows);
  console.log('Throughput ratios > 1: Cairn faster; latency ratios > 1: Cairn slower.');
  console.log("Cairn sends every durable confirm only after an fdatasync of the log (group commit shares one fdatasync among the publishes waiting on it).");
  console.log(note);
}
