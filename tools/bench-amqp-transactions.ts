/**
 * The transactional publisher of `npm run bench -- amqp`: persistent 100-byte
 * messages into a durable queue on a tx.select channel, committed in batches
 * (tx.commit waits for commit-ok: for Cairn, the batch's group of records is
 * fdatasynced), one connection. Messages per second over the whole run.
 * The client turns Nagle's algorithm off, as the latency cases do: each batch
 * ends with a small tx.commit frame that Nagle would hold until the broker's
 * delayed ACK of the publishes before it (~40 ms a commit, on both brokers).
 */
import amqp from 'amqplib';
import { txCommit, txSelect } from './amqp-transactions.js';

export async function transactionalPublish(url: string, total: number, batch: number, body: Buffer): Promise<number> {
  const model = await amqp.connect(url, { noDelay: true });
  try {
    const channel = await model.createChannel();
    const queue = `bench.transactional.${batch}`;
    await channel.assertQueue(queue, { durable: true });
    await channel.purgeQueue(queue);
    await txSelect(channel);
    const started = performance.now();
    for (let sent = 0; sent < total; sent += batch) {
      for (let i = 0; i < batch; i++) channel.sendToQueue(queue, body, { persistent: true });
      await txCommit(channel);
    }
    const seconds = (performance.now() - started) / 1000;
    await channel.deleteQueue(queue);
    return total / seconds;
  } finally {
    await model.close().catch(() => undefined);
  }
}
