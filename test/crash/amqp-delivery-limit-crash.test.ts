/**
 * Delivery counts across kill -9: the broker runs as a child process with a
 * durable queue whose x-delivery-limit is L and whose dead-letter exchange
 * leads to a durable queue; a consumer requeues (nack, requeue=true) every
 * message after a short random delay, so every message goes round and round,
 * and the broker is SIGKILLed at a random moment of every round — with
 * messages out for redelivery, nacks in flight — then restarted.
 *
 * A delivery's deliver record is durable before its basic.deliver leaves, so
 * after any number of crashes a message's x-delivery-count never falls behind
 * the deliveries its consumers saw (it may run ahead by a delivery that was
 * recorded but never reached the client). Invariants, per message, over every
 * round: the x-delivery-counts seen rise strictly, each is at least the number
 * of deliveries seen before it, no message is delivered more than L+1 times,
 * and in the end every confirmed message is in the dead-letter queue exactly
 * once, with one x-death (reason delivery_limit, count 1). Every fdatasync
 * is slowed (CAIRN_TEST_HOOK_SLOW_FDATASYNC_MS) so that records wait behind a
 * sync in flight, as on a slow disk. The seed is printed; CAIRN_TEST_SEED
 * replays the schedule.
 */
import type { Channel, ChannelModel } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { startBroker, tempDataDir, type BrokerProcess } from '../support/broker-process.js';
import { closeQuietly, closeTimeoutMs, connectQuietly, sleep } from '../support/crash-amqp-clients.js';
import { announceSeed, seededRandom, until } from '../support/kit.js';
import { slowFdatasyncVariable } from '../../src/test-hooks.js';

const roundCount = 4;
const deliveryLimit = 12;
const messagesPerRound = 16;
const requeueDelayMsMin = 5;
const requeueDelayMsSpread = 40;
const loadBeforeKillMsMin = 150;
const loadBeforeKillMsSpread = 600;
const fdatasyncDelayMs = 20;
const source = 'poison';
const dead = 'poison.dead';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function broker(dir: string): Promise<BrokerProcess> {
  // A slow disk widens the window in which a record waits behind the sync in flight: a delivery that
  // left before its deliver record was written is what a kill must be able to catch.
  const running = await startBroker(dir, ['--mqtt-port', 'off', '--snapshot-every', '300'], { [slowFdatasyncVariable]: String(fdatasyncDelayMs) });
  cleanups.push(() => running.kill());
  return running;
}

/** What the consumers saw of each message: the x-delivery-count of every delivery, in order. */
type Seen = Map<string, number[]>;

/** Requeues everything it gets after a random delay, recording each delivery's x-delivery-count (0 when absent). */
async function startRequeuer(model: ChannelModel, seen: Seen, random: () => number): Promise<void> {
  const channel = await model.createChannel();
  channel.on('error', () => undefined);
  await channel.prefetch(messagesPerRound);
  await channel.consume(source, (message) => {
    if (message === null) return;
    const body = message.content.toString();
    const count = Number(message.properties.headers?.['x-delivery-count'] ?? 0);
    seen.set(body, [...(seen.get(body) ?? []), count]);
    setTimeout(() => {
      try {
        channel.nack(message, false, true);
      } catch {
        // The broker is gone: the delivery comes back after the restart.
      }
    }, requeueDelayMsMin + random() * requeueDelayMsSpread);
  });
}

async function declare(channel: Channel): Promise<void> {
  await channel.assertQueue(dead, { durable: true });
  await channel.assertQueue(source, {
    durable: true, deadLetterExchange: '', deadLetterRoutingKey: dead, arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': deliveryLimit },
  });
}

describe('delivery counts across random kill -9', () => {
  it('randomized: counts never fall behind the deliveries seen, and each poison message dies once at the limit', { timeout: 120_000 }, async () => {
    const seed = announceSeed('amqp delivery-limit crash');
    const random = seededRandom(seed);
    const data = tempDataDir('cairn-delivery-limit-crash-');
    cleanups.push(() => data.remove());
    const confirmed = new Set<string>();
    const seen: Seen = new Map();

    let running = await broker(data.dir);
    for (let round = 0; round < roundCount; round++) {
      const publisher = await connectQuietly(running.amqpPort, cleanups);
      const confirms = await publisher.createConfirmChannel();
      await declare(confirms);
      for (let i = 0; i < messagesPerRound; i++) {
        const body = `r${round}-m${i}`;
        confirms.sendToQueue(source, Buffer.from(body), { persistent: true }, (error: unknown) => {
          if (error === null || error === undefined) confirmed.add(body);
        });
      }
      await confirms.waitForConfirms();
      const consumer = await connectQuietly(running.amqpPort, cleanups);
      await startRequeuer(consumer, seen, random);
      await sleep(loadBeforeKillMsMin + random() * loadBeforeKillMsSpread);
      await running.kill();
      await Promise.race([Promise.all([closeQuietly(publisher), closeQuietly(consumer)]), sleep(closeTimeoutMs)]);
      running = await broker(data.dir);
    }

    // After the last restart the requeuer runs every message to its limit.
    await startRequeuer(await connectQuietly(running.amqpPort, cleanups), seen, random);
    const check = await (await connectQuietly(running.amqpPort, cleanups)).createChannel();
    await until(async () => (await check.checkQueue(source)).messageCount === 0 && (await check.checkQueue(dead)).messageCount === confirmed.size,
      'every message dead-lettered', 60_000);

    const deadBodies = new Map<string, number>();
    const wrongDeaths: string[] = [];
    for (;;) {
      const message = await check.get(dead, { noAck: true });
      if (message === false) break;
      const body = message.content.toString();
      deadBodies.set(body, (deadBodies.get(body) ?? 0) + 1);
      const deaths = (message.properties.headers?.['x-death'] ?? []) as Array<{ queue: string; reason: string; count: number }>;
      if (deaths.length !== 1 || deaths[0]!.queue !== source || deaths[0]!.reason !== 'delivery_limit' || deaths[0]!.count !== 1) {
        wrongDeaths.push(`${body}: ${JSON.stringify(deaths)}`);
      }
    }
    const countProblems: string[] = [];
    for (const [body, counts] of seen) {
      if (counts.length > deliveryLimit + 1) countProblems.push(`${body}: delivered ${counts.length} times (limit ${deliveryLimit})`);
      counts.forEach((count, index) => {
        if (count < index) countProblems.push(`${body}: delivery ${index + 1} says x-delivery-count ${count}: counts ${counts.join(',')}`);
        if (index > 0 && count <= counts[index - 1]!) countProblems.push(`${body}: counts do not rise: ${counts.join(',')}`);
      });
    }
    const redeliveredAcrossCrash = [...seen.values()].filter((counts) => counts.some((count, index) => count > index)).length;
    console.log(`amqp delivery-limit crash: ${confirmed.size} confirmed, ${[...seen.values()].reduce((n, c) => n + c.length, 0)} deliveries seen, ${redeliveredAcrossCrash} messages whose count ran ahead of what was seen (crash windows)`);
    expect(countProblems, 'delivery counts behind the deliveries seen, or past the limit').toEqual([]);
    expect(wrongDeaths, 'dead-lettered with a wrong x-death').toEqual([]);
    expect([...deadBodies].filter(([, times]) => times !== 1), 'dead-lettered more than once').toEqual([]);
    expect([...confirmed].filter((body) => !deadBodies.has(body)), 'confirmed messages that never died').toEqual([]);
    expect(confirmed.size).toBe(roundCount * messagesPerRound);
  });
});
