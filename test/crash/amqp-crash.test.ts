/**
 * AMQP durability under load, proven by random SIGKILLs: the broker runs as a
 * child process (`cairn serve`, the built dist/), publishers on ConfirmChannels
 * and consumers with manual acks work one durable queue, and the broker is
 * killed with kill -9 at a random moment of every round, then restarted on the
 * same data directory. Invariants checked after a final drain:
 *   - every body whose publisher confirm arrived is consumed at least once
 *     (a confirm is sent only once the message is fsynced);
 *   - no body whose ack is durable is delivered again. The broker writes ack
 *     records without waiting for their fsync, so an ack sent just before the
 *     kill may be lost and its message legitimately redelivered: only acks sent
 *     at least `ackDurableAfterMs` before the kill count as durable.
 * The seed is printed; `CAIRN_TEST_SEED=<seed>` replays the same kill schedule.
 * Snapshots are taken every few hundred records, so restarts recover from a
 * snapshot plus the tail (the test checks that some restart did).
 */
import type { Channel, ChannelModel } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { logPosition } from '../support/broker-log-position.js';
import { startBroker, tempDataDir, type BrokerProcess } from '../support/broker-process.js';
import { closeQuietly, closeTimeoutMs, connectQuietly, sleep, startPublisher, type Worker } from '../support/crash-amqp-clients.js';
import { announceSeed, seededRandom } from '../support/kit.js';

const queue = 'crash.load';
const roundCount = 5;
const publishersPerRound = 2;
const consumersPerRound = 2;
const confirmWindowMessagesMax = 64; // unconfirmed publishes per channel before the publisher waits
const consumerPrefetch = 32;
const loadBeforeKillMsMin = 1000;
const loadBeforeKillMsSpread = 900;
// Group commit fsyncs far sooner than this; the margin covers the ack's trip through the socket and the broker.
// Under heavy load (a loaded 2-core machine: the event loop and the lazy ack fsync both wait for a CPU) an ack took longer than 300 ms to become durable.
const ackDurableAfterMs = 800;
/** Small enough that restarts load a snapshot and replay the tail after it. */
const snapshotEveryRecords = 500;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function broker(dir: string): Promise<BrokerProcess> {
  const running = await startBroker(dir, ['--mqtt-port', 'off', '--snapshot-every', String(snapshotEveryRecords)]);
  cleanups.push(() => running.kill());
  return running;
}


async function connect(port: number): Promise<ChannelModel> {
  return connectQuietly(port, cleanups);
}

/** What the test has seen, across all rounds: the ground truth the invariants are checked against. */
interface Ledger {
  readonly sent: Set<string>;
  readonly confirmed: Set<string>;
  /** Delivery times (performance.now()) per body, across rounds and the drain. */
  readonly deliveredAt: Map<string, number[]>;
  /** When the ack for a body was handed to the socket; the latest ack wins. */
  readonly ackedAt: Map<string, number>;
  /** Bodies acked at least `ackDurableAfterMs` before a kill, with the time of their first such ack. */
  readonly durablyAcked: Map<string, number>;
}

function recordDelivery(ledger: Ledger, message: { readonly content: Buffer }): string {
  const body = message.content.toString();
  const times = ledger.deliveredAt.get(body) ?? [];
  times.push(performance.now());
  ledger.deliveredAt.set(body, times);
  return body;
}

async function startConsumer(channel: Channel, ledger: Ledger): Promise<void> {
  await channel.prefetch(consumerPrefetch);
  await channel.consume(queue, (message) => {
    if (message === null) return; // cancelled by the broker
    const body = recordDelivery(ledger, message);
    try {
      channel.ack(message);
      ledger.ackedAt.set(body, performance.now());
    } catch {
      // The channel closed under us: this ack never left, the message stays owed.
    }
  }, { noAck: false });
}

/** One round of load: publishers and consumers on fresh connections, then a SIGKILL at a random moment. */
async function loadRound(running: BrokerProcess, round: number, random: () => number, ledger: Ledger): Promise<void> {
  const models: ChannelModel[] = [];
  const publishers: Worker[] = [];
  for (let p = 0; p < publishersPerRound; p++) {
    const model = await connect(running.amqpPort);
    models.push(model);
    const channel = await model.createConfirmChannel();
    channel.on('error', () => undefined);
    await channel.assertQueue(queue, { durable: true });
    publishers.push(startPublisher(channel, queue, `r${round}-p${p}`, confirmWindowMessagesMax, ledger));
  }
  for (let c = 0; c < consumersPerRound; c++) {
    const model = await connect(running.amqpPort);
    models.push(model);
    const channel = await model.createChannel();
    channel.on('error', () => undefined);
    await startConsumer(channel, ledger);
  }
  await sleep(loadBeforeKillMsMin + random() * loadBeforeKillMsSpread);
  const killedAt = performance.now();
  await running.kill();
  for (const publisher of publishers) publisher.stop();
  await Promise.race([Promise.all(publishers.map((p) => p.done)), sleep(closeTimeoutMs)]);
  await Promise.all(models.map((model) => closeQuietly(model)));
  for (const [body, at] of ledger.ackedAt) {
    // Keep the first durable ack: a later redelivery (a violation) would otherwise be acked again and hide it.
    if (at <= killedAt - ackDurableAfterMs && !ledger.durablyAcked.has(body)) ledger.durablyAcked.set(body, at);
  }
}

/** Consumes (and acks) everything left in the queue, until it stays empty. */
async function drain(running: BrokerProcess, ledger: Ledger): Promise<number> {
  const channel = await (await connect(running.amqpPort)).createChannel();
  channel.on('error', () => undefined);
  await channel.assertQueue(queue, { durable: true });
  let drained = 0;
  for (;;) {
    const message = await channel.get(queue, { noAck: false });
    if (message === false) break;
    recordDelivery(ledger, message);
    channel.ack(message);
    drained++;
  }
  return drained;
}

describe('AMQP across random kill -9 under load', () => {
  it('randomized: every confirmed message is consumed at least once; nothing durably acked is delivered again', { timeout: 120_000 }, async () => {
    const seed = announceSeed('amqp crash');
    const random = seededRandom(seed);
    const data = tempDataDir('cairn-amqp-crash-');
    cleanups.push(() => data.remove());
    const ledger: Ledger = { sent: new Set(), confirmed: new Set(), deliveredAt: new Map(), ackedAt: new Map(), durablyAcked: new Map() };

    let running = await broker(data.dir);
    const snapshotsLoaded: number[] = [];
    for (let round = 0; round < roundCount; round++) {
      await loadRound(running, round, random, ledger);
      running = await broker(data.dir);
      snapshotsLoaded.push((await logPosition(running)).recovery?.snapshotLsn ?? 0);
    }
    console.log(`amqp crash: restarts loaded snapshots at LSNs ${snapshotsLoaded.join(', ')} and replayed the tail`);
    expect(snapshotsLoaded.some((lsn) => lsn > 0), 'some restart recovered from a snapshot plus the tail').toBe(true);
    const drained = await drain(running, ledger);

    const unknown = [...ledger.deliveredAt.keys()].filter((body) => !ledger.sent.has(body));
    expect(unknown, 'delivered bodies that were never published').toEqual([]);
    const lost = [...ledger.confirmed].filter((body) => !ledger.deliveredAt.has(body));
    expect(lost, 'confirmed bodies never consumed').toEqual([]);
    const reappeared = [...ledger.durablyAcked].filter(([body, ackedAt]) => ledger.deliveredAt.get(body)!.some((at) => at > ackedAt));
    expect(reappeared.map(([body]) => body), 'durably acked bodies delivered again').toEqual([]);
    const redelivered = [...ledger.deliveredAt.values()].filter((times) => times.length > 1).length;
    console.log(`amqp crash seed ${seed}: ${ledger.sent.size} sent, ${ledger.confirmed.size} confirmed, ${ledger.deliveredAt.size} consumed `
      + `(${redelivered} more than once), ${ledger.durablyAcked.size} durably acked, ${drained} drained at the end`);
    expect(ledger.confirmed.size).toBeGreaterThan(0);
    expect(ledger.durablyAcked.size).toBeGreaterThan(0);
  });
});
