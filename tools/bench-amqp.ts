/**
 * AMQP 0-9-1 benchmark against Cairn (child process, amqplib client), 100-byte
 * bodies, durable queues and persistent messages throughout:
 *   - publisher confirms, pipelined: 10,000 messages on one connection, and
 *     10,000 split over 8 connections in parallel (one queue each), then
 *     waitForConfirms;
 *   - sequential confirm latency: 500 publishes, each awaiting its confirm;
 *   - end-to-end throughput publisher → consumer (10,000, manual ack,
 *     prefetch 100), timed from the first publish to the last delivery;
 *   - end-to-end latency: 500 sequential publish → deliver round trips.
 * RabbitMQ is compared only if `rabbitmq-server` is installed (never installed here).
 * Data lives in a temp dir (CAIRN_BENCH_DIR picks the disk), removed afterwards.
 */
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import { commandExists, fmt, printTable, rawFdatasync, startCairn, summarize, tempDir, type LatencySummary } from './bench-mqtt.js';

const body = Buffer.alloc(100, 0x62);
const pipelinedCount = 10_000;
const connectionsParallel = 8;
const latencyCount = 500;
const e2eCount = 10_000;
const prefetch = 100;
const caseTimeoutMs = 60_000;

function withTimeout<T>(promise: Promise<T>, label: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${label}: timed out after ${caseTimeoutMs} ms`)), caseTimeoutMs); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function sendWithBackpressure(channel: ConfirmChannel, queue: string): Promise<void> {
  if (!channel.sendToQueue(queue, body, { persistent: true })) {
    await new Promise<void>((done) => channel.once('drain', () => done()));
  }
}

async function pipelined(url: string, connections: number, total: number): Promise<number> {
  const models: ChannelModel[] = [];
  try {
    const channels: Array<{ channel: ConfirmChannel; queue: string }> = [];
    for (let i = 0; i < connections; i++) {
      const model = await amqp.connect(url);
      models.push(model);
      const channel = await model.createConfirmChannel();
      const queue = `bench.pipelined.${connections}.${i}`;
      await channel.assertQueue(queue, { durable: true });
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

async function sequentialConfirms(url: string): Promise<LatencySummary> {
  const model = await amqp.connect(url);
  try {
    const channel = await model.createConfirmChannel();
    const queue = 'bench.sequential';
    await channel.assertQueue(queue, { durable: true });
    const publishOne = (): Promise<void> => new Promise((done, reject) => {
      channel.sendToQueue(queue, body, { persistent: true }, (error) => (error ? reject(error) : done()));
    });
    for (let i = 0; i < 20; i++) await publishOne();
    const samples: number[] = [];
    for (let i = 0; i < latencyCount; i++) {
      const started = performance.now();
      await publishOne();
      samples.push(performance.now() - started);
    }
    await channel.deleteQueue(queue);
    return summarize(samples);
  } finally {
    await model.close().catch(() => undefined);
  }
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

async function endToEndLatency(url: string): Promise<LatencySummary> {
  const publisherModel = await amqp.connect(url);
  const consumerModel = await amqp.connect(url);
  try {
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
    for (let i = 0; i < 20; i++) await roundTrip();
    const samples: number[] = [];
    for (let i = 0; i < latencyCount; i++) {
      const started = performance.now();
      await roundTrip();
      samples.push(performance.now() - started);
    }
    await publisher.waitForConfirms();
    await publisher.deleteQueue(queue);
    return summarize(samples);
  } finally {
    await publisherModel.close().catch(() => undefined);
    await consumerModel.close().catch(() => undefined);
  }
}

export async function benchAmqp(): Promise<void> {
  const raw = rawFdatasync(500);
  const data = tempDir('cairn-bench-amqp-');
  const rows: string[][] = [['case (durable queue, persistent, 100 B)', 'Cairn']];
  try {
    const broker = await startCairn(data.dir);
    try {
      const url = `amqp://127.0.0.1:${broker.amqpPort}`;
      const rate = (value: number): string => `${Math.round(value).toLocaleString('en-US')} msg/s`;
      const ms = (value: number): string => `${fmt(value, 3)} ms`;
      rows.push(['raw write(100 B)+fdatasync p50 / p99', `${ms(raw.p50)} / ${ms(raw.p99)}`]);
      rows.push([`confirms pipelined, 1 connection (${pipelinedCount})`, rate(await withTimeout(pipelined(url, 1, pipelinedCount), 'pipelined x1'))]);
      rows.push([`confirms pipelined, ${connectionsParallel} connections (${pipelinedCount} total)`, rate(await withTimeout(pipelined(url, connectionsParallel, pipelinedCount), `pipelined x${connectionsParallel}`))]);
      const sequential = await withTimeout(sequentialConfirms(url), 'sequential confirms');
      rows.push([`sequential confirm latency p50 (${latencyCount})`, ms(sequential.p50)]);
      rows.push([`sequential confirm latency p99 (${latencyCount})`, ms(sequential.p99)]);
      const e2e = await withTimeout(endToEndThroughput(url), 'end-to-end throughput');
      rows.push([`end-to-end throughput (${e2eCount}, ack, prefetch ${prefetch})`, `${rate(e2e.rate)} (${e2e.received}/${e2eCount})`]);
      const e2eLatency = await withTimeout(endToEndLatency(url), 'end-to-end latency');
      rows.push([`end-to-end latency p50 (${latencyCount} sequential)`, ms(e2eLatency.p50)]);
      rows.push([`end-to-end latency p99 (${latencyCount} sequential)`, ms(e2eLatency.p99)]);
    } finally {
      await broker.stop();
    }
  } finally {
    data.remove();
  }
  console.log('AMQP (amqplib), 100-byte bodies, durable queues, persistent messages');
  printTable(rows);
  console.log(commandExists('rabbitmq-server') ? 'rabbitmq-server is installed, but the comparison is not implemented: skipped.' : 'RabbitMQ not installed: skipped');
}
