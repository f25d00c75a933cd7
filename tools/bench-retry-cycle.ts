/**
 * The retry-queue cycle of `npm run bench -- amqp`: the pattern applications
 * build from dead-lettering and TTL to retry a failed message after a delay.
 *
 *   publish ──▶ work ──(consumer rejects, requeue=false)──▶ DLX '' ──▶ wait
 *                 ▲                                                      │
 *                 └──────────── DLX '' ◀── x-message-ttl runs out ◀──────┘
 *
 * Both queues durable, messages persistent (100 B). The consumer on `work`
 * (prefetch 100, manual ack) rejects a message until its x-death says it has
 * come back from `wait` `cyclesPerMessage` times, then acks it. The rate is
 * passes through `work` per second, timed from the first publish to the last
 * ack; every message must finish, and the count of passes is checked.
 */
import amqp, { type ConsumeMessage } from 'amqplib';

export const retryMessages = 2000;
export const cyclesPerMessage = 5;
/** The retry delay: short, so that the cycle's machinery is measured, not the wait. */
const retryDelayMs = 1;
const prefetch = 100;
const body = Buffer.alloc(100, 0x72);

function retriesOf(message: ConsumeMessage, waitQueue: string): number {
  const deaths = (message.properties.headers?.['x-death'] ?? []) as Array<{ queue?: string; reason?: string; count?: number }>;
  return deaths.find((death) => death.queue === waitQueue && death.reason === 'expired')?.count ?? 0;
}

/** Passes through the work queue per second, and how many passes were seen (retryMessages × (cyclesPerMessage + 1) when complete). */
export async function retryCycle(url: string): Promise<{ rate: number; passes: number }> {
  const publisherModel = await amqp.connect(url);
  const consumerModel = await amqp.connect(url);
  const work = 'bench.retry.work';
  const wait = 'bench.retry.wait';
  try {
    const publisher = await publisherModel.createConfirmChannel();
    for (const queue of [work, wait]) await publisher.deleteQueue(queue);
    await publisher.assertQueue(work, { durable: true, deadLetterExchange: '', deadLetterRoutingKey: wait });
    await publisher.assertQueue(wait, { durable: true, deadLetterExchange: '', deadLetterRoutingKey: work, messageTtl: retryDelayMs });
    const consumer = await consumerModel.createChannel();
    await consumer.prefetch(prefetch);
    let passes = 0;
    let finished = 0;
    let lastAt = 0;
    let done: () => void = () => undefined;
    const all = new Promise<void>((resolve) => { done = resolve; });
    await consumer.consume(work, (message) => {
      if (message === null) return;
      passes++;
      if (retriesOf(message, wait) < cyclesPerMessage) {
        consumer.nack(message, false, false);
        return;
      }
      consumer.ack(message);
      finished++;
      lastAt = performance.now();
      if (finished === retryMessages) done();
    });
    const started = performance.now();
    for (let i = 0; i < retryMessages; i++) {
      if (!publisher.sendToQueue(work, body, { persistent: true })) await new Promise<void>((resolve) => publisher.once('drain', () => resolve()));
    }
    await publisher.waitForConfirms();
    await all;
    for (const queue of [work, wait]) await publisher.deleteQueue(queue);
    return { rate: passes / ((lastAt - started) / 1000), passes };
  } finally {
    await publisherModel.close().catch(() => undefined);
    await consumerModel.close().catch(() => undefined);
  }
}
