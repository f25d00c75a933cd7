/**
 * Expiry and dead-lettering across kill -9: the broker runs as a child
 * process; publishers fill two durable queues — one whose messages expire
 * (x-message-ttl) and one whose consumer rejects everything — both
 * dead-lettering into durable queues, and the broker is SIGKILLed at a random
 * moment of every round, mid-expiry and mid-rejection, then restarted.
 * Invariants after a final drain: every confirmed message is in its
 * dead-letter queue exactly once (a death is recorded once: the copy's msg
 * record is the removal of the original), with one x-death entry of count 1
 * naming its queue and reason; nothing is left in the source queues, and no
 * unknown body appears. Real time (short TTLs): the child process has no
 * manual clock. The seed is printed; CAIRN_TEST_SEED replays the schedule.
 */
import type { Channel, ChannelModel } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { startBroker, tempDataDir, type BrokerProcess } from '../support/broker-process.js';
import { closeQuietly, closeTimeoutMs, connectQuietly, sleep, startPublisher, type Worker } from '../support/crash-amqp-clients.js';
import { announceSeed, seededRandom, until } from '../support/kit.js';

const roundCount = 4;
const messageTtlMs = 150;
const confirmWindowMessagesMax = 32;
const loadBeforeKillMsMin = 300;
const loadBeforeKillMsSpread = 900;

const queues = {
  expiring: { source: 'expire.src', dead: 'expire.dead', reason: 'expired' },
  rejected: { source: 'reject.src', dead: 'reject.dead', reason: 'rejected' },
} as const;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function broker(dir: string): Promise<BrokerProcess> {
  const running = await startBroker(dir, ['--mqtt-port', 'off', '--snapshot-every', '400']);
  cleanups.push(() => running.kill());
  return running;
}

async function connect(port: number): Promise<ChannelModel> {
  return connectQuietly(port, cleanups);
}

async function declare(channel: Channel): Promise<void> {
  for (const { source, dead } of Object.values(queues)) {
    await channel.assertQueue(dead, { durable: true });
    await channel.assertQueue(source, {
      durable: true, deadLetterExchange: '', deadLetterRoutingKey: dead, ...(source === queues.expiring.source ? { messageTtl: messageTtlMs } : {}),
    });
  }
}

/** A consumer that rejects (without requeue) everything it gets: each message dies in reject.src. */
async function startRejecter(port: number): Promise<ChannelModel> {
  const model = await connect(port);
  const channel = await model.createChannel();
  channel.on('error', () => undefined);
  await channel.prefetch(16);
  await channel.consume(queues.rejected.source, (message) => {
    if (message === null) return;
    try {
      channel.reject(message, false);
    } catch {
      // The channel closed under us: the message goes back to the queue and dies later.
    }
  });
  return model;
}

describe('dead-lettering and expiry across random kill -9', () => {
  it('randomized: every confirmed message dies exactly once, with one x-death of count 1', { timeout: 120_000 }, async () => {
    const seed = announceSeed('amqp dead-letter crash');
    const random = seededRandom(seed);
    const data = tempDataDir('cairn-dead-letter-crash-');
    cleanups.push(() => data.remove());
    const sent = new Set<string>();
    const confirmed = new Set<string>();

    let running = await broker(data.dir);
    for (let round = 0; round < roundCount; round++) {
      const models: ChannelModel[] = [];
      const setup = await (await connect(running.amqpPort)).createChannel();
      await declare(setup);
      const workers: Worker[] = [];
      for (const { source } of Object.values(queues)) {
        const model = await connect(running.amqpPort);
        models.push(model);
        const channel = await model.createConfirmChannel();
        channel.on('error', () => undefined);
        workers.push(startPublisher(channel, source, `r${round}-${source}`, confirmWindowMessagesMax, { sent, confirmed }));
      }
      models.push(await startRejecter(running.amqpPort));
      await sleep(loadBeforeKillMsMin + random() * loadBeforeKillMsSpread);
      await running.kill();
      for (const worker of workers) worker.stop();
      await Promise.race([Promise.all(workers.map((w) => w.done)), sleep(closeTimeoutMs)]);
      await Promise.all(models.map((model) => closeQuietly(model)));
      running = await broker(data.dir);
    }

    // After the last restart: the rejecter empties reject.src, the TTL empties expire.src.
    await startRejecter(running.amqpPort);
    const check = await (await connect(running.amqpPort)).createChannel();
    await until(async () => {
      const counts = await Promise.all(Object.values(queues).map(({ source }) => check.checkQueue(source)));
      return counts.every((count) => count.messageCount === 0);
    }, 'both source queues empty', 30_000);

    const dead = new Map<string, Array<{ queue: string; reason: string; count: number }>>();
    const unexpected: string[] = [];
    for (const { dead: deadQueue, source, reason } of Object.values(queues)) {
      for (;;) {
        const message = await check.get(deadQueue, { noAck: true });
        if (message === false) break;
        const body = message.content.toString();
        const deaths = (message.properties.headers?.['x-death'] ?? []) as Array<{ queue: string; reason: string; count: number }>;
        if (dead.has(body) || !body.includes(source)) unexpected.push(`${body} (in ${deadQueue})`);
        dead.set(body, deaths.map(({ queue, reason: why, count }) => ({ queue, reason: why, count })));
        if (deaths.length !== 1 || deaths[0]!.queue !== source || deaths[0]!.reason !== reason || deaths[0]!.count !== 1) {
          unexpected.push(`${body}: x-death ${JSON.stringify(deaths)}`);
        }
      }
    }
    console.log(`amqp dead-letter crash: ${confirmed.size} confirmed of ${sent.size} sent, ${dead.size} dead-lettered`);
    expect([...dead.keys()].filter((body) => !sent.has(body)), 'dead-lettered bodies never published').toEqual([]);
    expect(unexpected, 'bodies dead-lettered twice, in the wrong queue or with a wrong x-death').toEqual([]);
    expect([...confirmed].filter((body) => !dead.has(body)), 'confirmed bodies that never died').toEqual([]);
    expect(confirmed.size).toBeGreaterThan(0);
  });
});
