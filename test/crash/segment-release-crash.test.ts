/**
 * Segment release across kill -9 (core/segment-release.ts): before each
 * snapshot the few messages still queued in old segments are written again at
 * the head of the log (msg records with `movedFrom`), and retention then
 * removes the old segments. A crash at any point of that — copies appended but
 * not durable, durable but no snapshot yet, snapshot written, segments half
 * removed — must neither lose a queued message nor duplicate one.
 *
 * The broker runs as a child with tiny segments, frequent snapshots and no
 * retention floor. A durable queue `kept` is filled first and never consumed
 * (more is added each round); churn through a second queue rolls segments and
 * triggers snapshots and releases; the broker is SIGKILLed at a random moment
 * of every round and restarted. At the end: every segment that held the first
 * `kept` messages is gone (they were released, not pinned), the log shows
 * moves, and `kept` holds every confirmed body exactly once, nothing else.
 * The seed is printed; CAIRN_TEST_SEED replays the schedule.
 */
import { readdirSync } from 'node:fs';
import type { Channel, ChannelModel } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { parseSegmentFileName } from '../../src/log/segment.js';
import { runCairnCommand, startBroker, tempDataDir, useCleanups, type BrokerProcess } from '../support/broker-process.js';
import { closeQuietly, closeTimeoutMs, connectQuietly, sleep, startPublisher, type Worker } from '../support/crash-amqp-clients.js';
import { announceSeed, seededRandom, until } from '../support/kit.js';

const roundCount = 5;
const confirmWindowMessagesMax = 32;
const loadBeforeKillMsMin = 300;
const loadBeforeKillMsSpread = 1200;
const firstKeptMessages = 40;

const cleanups = useCleanups();

async function broker(dir: string): Promise<BrokerProcess> {
  const running = await startBroker(dir, ['--mqtt-port', 'off', '--segment-bytes', '4096', '--snapshot-every', '300', '--retention-bytes', '0', '--release-segments', 'auto']);
  cleanups.push(() => running.kill());
  return running;
}

async function declare(channel: Channel): Promise<void> {
  await channel.assertQueue('kept', { durable: true });
  await channel.assertQueue('churn', { durable: true });
}

/** Acks everything in `churn`: the records that roll segments and make the old ones mostly dead. */
async function startChurnConsumer(model: ChannelModel): Promise<void> {
  const channel = await model.createChannel();
  channel.on('error', () => undefined);
  await channel.prefetch(64);
  await channel.consume('churn', (message) => {
    if (message === null) return;
    try { channel.ack(message); } catch { /* the broker is gone: the message comes back after the restart */ }
  });
}

/** From the file names alone: the broker's retention removes segments meanwhile, and opening them raced it (ENOENT once). */
function segmentFirstLsns(dir: string): number[] {
  return readdirSync(dir).map(parseSegmentFileName).filter((lsn): lsn is number => lsn !== undefined);
}

describe('segment release across random kill -9', () => {
  it('randomized: released segments take no queued message with them, and none comes back twice', { timeout: 180_000 }, async () => {
    const seed = announceSeed('segment release crash');
    const random = seededRandom(seed);
    const data = tempDataDir('cairn-segment-release-crash-');
    cleanups.push(() => data.remove());
    const kept = { sent: new Set<string>(), confirmed: new Set<string>() };
    const churned = { sent: new Set<string>(), confirmed: new Set<string>() };

    let running = await broker(data.dir);
    const first = await connectQuietly(running.amqpPort, cleanups);
    const firstChannel = await first.createConfirmChannel();
    await declare(firstChannel);
    for (let i = 0; i < firstKeptMessages; i++) {
      const body = `first-m${i}`;
      kept.sent.add(body);
      firstChannel.sendToQueue('kept', Buffer.from(body), { persistent: true });
    }
    await firstChannel.waitForConfirms();
    for (let i = 0; i < firstKeptMessages; i++) kept.confirmed.add(`first-m${i}`);
    // Every segment that holds one of the first messages starts at or before this LSN.
    const firstMessagesSegmentsEndAt = Math.max(...segmentFirstLsns(data.dir));
    await closeQuietly(first);

    for (let round = 0; round < roundCount; round++) {
      const models: ChannelModel[] = [];
      const workers: Worker[] = [];
      for (const [queue, record, window] of [['churn', churned, confirmWindowMessagesMax], ['kept', kept, 2]] as const) {
        const model = await connectQuietly(running.amqpPort, cleanups);
        models.push(model);
        const channel = await model.createConfirmChannel();
        channel.on('error', () => undefined);
        await declare(channel);
        workers.push(startPublisher(channel, queue, `r${round}-${queue}`, window, record));
      }
      const consumer = await connectQuietly(running.amqpPort, cleanups);
      models.push(consumer);
      await startChurnConsumer(consumer);
      await sleep(loadBeforeKillMsMin + random() * loadBeforeKillMsSpread);
      await running.kill();
      for (const worker of workers) worker.stop();
      await Promise.race([Promise.all(workers.map((w) => w.done)), sleep(closeTimeoutMs)]);
      await Promise.all(models.map((model) => closeQuietly(model)));
      running = await broker(data.dir);
    }

    // After the last restart: churn on until the segments of the first messages are released.
    const model = await connectQuietly(running.amqpPort, cleanups);
    const channel = await model.createConfirmChannel();
    await startChurnConsumer(await connectQuietly(running.amqpPort, cleanups));
    let extra = 0;
    await until(async () => {
      for (let i = 0; i < 200; i++) channel.sendToQueue('churn', Buffer.from(`final-churn-${extra++}`), { persistent: true });
      await channel.waitForConfirms();
      return Math.min(...segmentFirstLsns(data.dir)) > firstMessagesSegmentsEndAt;
    }, `the segments up to LSN ${firstMessagesSegmentsEndAt} released`, 60_000);

    const received = new Map<string, number>();
    for (;;) {
      const message = await channel.get('kept', { noAck: true });
      if (message === false) break;
      const body = message.content.toString();
      received.set(body, (received.get(body) ?? 0) + 1);
    }
    await running.stop();
    const records = await runCairnCommand(['inspect', 'records', '--data', data.dir, '--kind', 'msg']);
    const moves = records.stdout.split('\n').filter((line) => line.includes('moved-from=')).length;
    const verify = await runCairnCommand(['inspect', 'verify', '--data', data.dir]);

    console.log(`segment release crash: ${kept.confirmed.size} confirmed into kept of ${kept.sent.size} sent, ${received.size} read back; ${moves} moved copies in the log; ${churned.confirmed.size} churn messages confirmed`);
    expect([...received].filter(([, count]) => count > 1), 'kept bodies delivered more than once').toEqual([]);
    expect([...received.keys()].filter((body) => !kept.sent.has(body)), 'bodies never published to kept').toEqual([]);
    expect([...kept.confirmed].filter((body) => !received.has(body)), 'confirmed kept bodies lost').toEqual([]);
    expect(moves, 'msg records with moved-from in the log').toBeGreaterThan(0);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
  });
});
