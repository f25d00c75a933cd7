/**
 * The AMQP side of the backlog benchmark (bench-backlog.ts), the same amqplib
 * client against every broker:
 *   - fill: one publisher connection per durable queue, persistent messages on
 *     a confirm channel with a window of `confirmWindow` unconfirmed messages
 *     (pipelined confirms), the rate taken per slice of `sliceMessages`
 *     confirmed messages across all publishers;
 *   - counts: queue.declare passive on every queue, polled until each holds
 *     what it held before the crash (the restart time);
 *   - drain: one consumer connection per queue, prefetch `drainPrefetch`,
 *     manual acks, one basic.ack per message.
 * A phase that makes no progress for `stallMs` fails instead of hanging.
 */
import { once } from 'node:events';
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';

export const sliceMessages = 50_000;
export const confirmWindow = 1000;
export const drainPrefetch = 1000;
const stallMs = 120_000;
const countPollMs = 20;

export interface FillResult {
  readonly confirmed: number;
  readonly seconds: number;
  /** msg/s of each complete slice of sliceMessages confirms, in order (a last partial slice is left out). */
  readonly sliceRates: readonly number[];
}

export interface DrainResult {
  readonly received: number;
  readonly seconds: number;
  /** Deliveries whose body was not the published size (should be 0). */
  readonly wrongSize: number;
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** A connection whose 'error' events (a broker killed under it) are expected, not crashes of the bench. */
async function connectQuietly(url: string): Promise<ChannelModel> {
  const model = await amqp.connect(url);
  model.on('error', () => undefined);
  return model;
}

async function closeAll(models: readonly ChannelModel[]): Promise<void> {
  for (const model of models) await model.close().catch(() => undefined);
}

/** Resolves with `work`, or rejects when `progress()` has not changed for stallMs. */
async function failOnStall<T>(label: string, work: Promise<T>, progress: () => number): Promise<T> {
  let last = progress();
  let lastChangeAt = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setInterval(() => {
      const now = progress();
      if (now !== last) { last = now; lastChangeAt = Date.now(); return; }
      if (Date.now() - lastChangeAt > stallMs) reject(new Error(`${label}: no progress for ${stallMs / 1000} s (at ${now})`));
    }, 1000);
  });
  return Promise.race([work, stalled]).finally(() => clearInterval(timer));
}

async function publishWindowed(channel: ConfirmChannel, queue: string, count: number, body: Buffer, confirmed: () => void): Promise<void> {
  let outstanding = 0;
  let freed: (() => void) | undefined;
  let failure: Error | undefined;
  for (let i = 0; i < count; i++) {
    if (failure !== undefined) throw failure;
    if (outstanding >= confirmWindow) await new Promise<void>((done) => { freed = done; });
    outstanding++;
    const accepted = channel.sendToQueue(queue, body, { persistent: true }, (error: unknown) => {
      outstanding--;
      if (error === null || error === undefined) confirmed();
      else failure ??= new Error(`publish to ${queue} was not confirmed: ${String(error)}`);
      const wake = freed;
      freed = undefined;
      wake?.();
    });
    if (!accepted) await once(channel, 'drain');
  }
  await channel.waitForConfirms();
  if (failure !== undefined) throw failure;
}

/**
 * The fill's warm-up: `count` messages through a scratch durable queue, then the queue deleted. A cold
 * process (the broker's and this client's code not yet compiled by V8's optimizing tiers) spent 4-5x the CPU
 * per message on its first 10,000 messages, so the first 50k slice of a cold fill measured the JIT.
 */
export async function warmUp(url: string, queue: string, count: number, body: Buffer): Promise<void> {
  await fillQueues(url, [queue], count, body);
  const model = await connectQuietly(url);
  try {
    const channel = await model.createChannel();
    await channel.deleteQueue(queue);
  } finally {
    await closeAll([model]);
  }
}

/** Publishes `perQueue` persistent messages of `body` into each durable queue, one publisher per queue, in parallel. */
export async function fillQueues(url: string, queues: readonly string[], perQueue: number, body: Buffer): Promise<FillResult> {
  const models: ChannelModel[] = [];
  try {
    const channels: ConfirmChannel[] = [];
    for (const queue of queues) {
      const model = await connectQuietly(url);
      models.push(model);
      const channel = await model.createConfirmChannel();
      await channel.assertQueue(queue, { durable: true });
      channels.push(channel);
    }
    let confirmed = 0;
    const sliceRates: number[] = [];
    const started = performance.now();
    let sliceStartedAt = started;
    const onConfirmed = (): void => {
      confirmed++;
      if (confirmed % sliceMessages !== 0) return;
      const now = performance.now();
      sliceRates.push(sliceMessages / ((now - sliceStartedAt) / 1000));
      sliceStartedAt = now;
    };
    const publishing = Promise.all(channels.map((channel, i) => publishWindowed(channel, queues[i]!, perQueue, body, onConfirmed)));
    await failOnStall('fill', publishing, () => confirmed);
    return { confirmed, seconds: (performance.now() - started) / 1000, sliceRates };
  } finally {
    await closeAll(models);
  }
}

/** Each queue's ready-message count (queue.declare passive); rejects if a queue is not there (yet). */
async function queueCounts(model: ChannelModel, queues: readonly string[]): Promise<number[]> {
  const channel = await model.createChannel();
  channel.on('error', () => undefined); // a 404 closes the channel: the caller retries on a new one
  try {
    const counts: number[] = [];
    for (const queue of queues) counts.push((await channel.checkQueue(queue)).messageCount);
    return counts;
  } finally {
    await channel.close().catch(() => undefined);
  }
}

/** The queues' counts right now. */
export async function readCounts(url: string, queues: readonly string[]): Promise<number[]> {
  const model = await connectQuietly(url);
  try {
    return await queueCounts(model, queues);
  } finally {
    await closeAll([model]);
  }
}

/**
 * Polls until every queue holds at least `expected[i]` (connections refused while the broker starts are retried);
 * resolves with the last counts seen and whether they got there before `timeoutMs`.
 */
export async function waitForCounts(url: () => string, queues: readonly string[], expected: readonly number[], timeoutMs: number): Promise<{ counts: number[]; complete: boolean }> {
  const deadline = Date.now() + timeoutMs;
  let model: ChannelModel | undefined;
  let counts: number[] = queues.map(() => 0);
  try {
    while (Date.now() < deadline) {
      try {
        model ??= await connectQuietly(url());
        counts = await queueCounts(model, queues);
        if (counts.every((count, i) => count >= expected[i]!)) return { counts, complete: true };
      } catch {
        if (model !== undefined) await closeAll([model]);
        model = undefined;
      }
      await sleep(countPollMs);
    }
    return { counts, complete: false };
  } finally {
    if (model !== undefined) await closeAll([model]);
  }
}

/** Consumes `expected[i]` messages from each queue, one consumer connection per queue, acking each one. */
export async function drainQueues(url: string, queues: readonly string[], expected: readonly number[], bodyBytes: number): Promise<DrainResult> {
  const models: ChannelModel[] = [];
  try {
    const channels = [];
    for (let i = 0; i < queues.length; i++) {
      const model = await connectQuietly(url);
      models.push(model);
      const channel = await model.createChannel();
      await channel.prefetch(drainPrefetch);
      channels.push(channel);
    }
    const total = expected.reduce((sum, count) => sum + count, 0);
    let received = 0;
    let wrongSize = 0;
    let lastAt = performance.now();
    let allReceived: () => void = () => undefined;
    const done = new Promise<void>((resolvePromise) => { allReceived = resolvePromise; });
    const started = performance.now();
    for (const [i, channel] of channels.entries()) {
      await channel.consume(queues[i]!, (message) => {
        if (message === null) return;
        if (message.content.length !== bodyBytes) wrongSize++;
        channel.ack(message);
        received++;
        lastAt = performance.now();
        if (received === total) allReceived();
      }, { noAck: false });
    }
    if (total > 0) await failOnStall('drain', done, () => received);
    return { received, seconds: (lastAt - started) / 1000, wrongSize };
  } finally {
    await closeAll(models);
  }
}
