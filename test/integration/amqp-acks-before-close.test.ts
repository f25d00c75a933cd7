/**
 * Frames are processed in order: every basic.ack / nack / reject that arrives
 * before channel.close, connection.close or the end of the socket is applied
 * (and recorded in the log) before the channel's unacked deliveries are
 * requeued. Issue 11, defect 2: a consumer that acked 10,000 of 20,000
 * persistent messages and closed its connection found 520–559 acknowledged
 * messages back in the queue.
 *
 * amqplib over real sockets against an in-process broker on a real data
 * directory; each case checks the queue's count live and again after the
 * broker restarts on the same directory (the records, not just memory).
 */
import type { Socket } from 'node:net';
import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { startCairn, type RunningCairn } from '../../src/server.js';
import { encodeMethodFrame, FRAME_TYPE, decodeMethod } from '../../src/protocols/amqp/codec/index.js';
import { RawClient } from '../support/amqp-raw-client.js';
import { tempDirectory, until } from '../support/kit.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startBroker(dataDir: string): Promise<RunningCairn> {
  const config = parseServeArgs(['--data', dataDir, '--amqp-port', '0', '--mqtt-port', 'off', '--http-port', 'off'], {});
  const cairn = await startCairn(config, silentLogger());
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await cairn.close();
  };
  cleanups.push(close);
  return { ...cairn, close };
}

async function connect(cairn: RunningCairn): Promise<ChannelModel> {
  const connection = await amqp.connect(`amqp://127.0.0.1:${cairn.amqpPort!}`);
  connection.on('error', () => undefined);
  cleanups.push(() => connection.close().catch(() => undefined));
  return connection;
}

const queue = 'work';

async function fill(cairn: RunningCairn, total: number): Promise<void> {
  const channel = await (await connect(cairn)).createConfirmChannel();
  await channel.assertQueue(queue, { durable: true });
  for (let i = 0; i < total; i++) channel.sendToQueue(queue, Buffer.from(`m${i}`), { persistent: true });
  await channel.waitForConfirms();
  await channel.close();
}

async function readyCount(cairn: RunningCairn): Promise<number> {
  const channel = await (await connect(cairn)).createChannel();
  const { messageCount } = await channel.checkQueue(queue);
  await channel.close();
  return messageCount;
}

/** Once the consumer is gone with nothing unacked left, the queue holds exactly what was not settled. */
async function expectLiveCount(cairn: RunningCairn, total: number, settled: number): Promise<void> {
  const runtime = cairn.broker.queues.get(queue);
  await until(() => runtime !== undefined && runtime.unacked.size === 0 && runtime.consumers.length === 0, 'the consumer to be gone with nothing unacked');
  expect(await readyCount(cairn), `${total} published, ${settled} settled`).toBe(total - settled);
}

/** Restart on the same data directory: the log must say the same. */
async function countAfterRestart(cairn: RunningCairn, dataDir: string): Promise<number> {
  await cairn.broker.flush();
  await cairn.close();
  const restarted = await startBroker(dataDir);
  return readyCount(restarted);
}

type Finish = (connection: ChannelModel, channel: Channel) => void;

/**
 * Consume with `prefetch`, ack each message as it arrives, and after `ackCount`
 * acks call `finish` in the same tick as the last ack.
 */
async function consumeAndFinish(cairn: RunningCairn, prefetch: number, ackCount: number, finish: Finish): Promise<void> {
  const connection = await amqp.connect(`amqp://127.0.0.1:${cairn.amqpPort!}`);
  connection.on('error', () => undefined);
  const channel = await connection.createChannel();
  channel.on('error', () => undefined);
  await channel.prefetch(prefetch);
  let acked = 0;
  let finished = false;
  await channel.consume(queue, (message: ConsumeMessage | null) => {
    if (message === null || finished) return;
    channel.ack(message);
    acked++;
    if (acked === ackCount) {
      finished = true;
      finish(connection, channel);
    }
  });
  await until(() => finished, `${ackCount} acks`, 30_000);
}

const closeConnection: Finish = (connection) => void connection.close().catch(() => undefined);
const closeChannel: Finish = (connection, channel) => {
  void channel.close().catch(() => undefined).then(() => connection.close()).catch(() => undefined);
};
/** The parts of amqplib's connection this test reaches into: the socket and each channel's write buffer. */
interface AmqplibInternals {
  readonly connection: { readonly stream: Socket; readonly channels: Array<{ readonly buffer: { readonly readableLength: number } } | null> };
}

/**
 * amqplib queues frames per channel and writes them to the socket on a later
 * turn: destroy the socket the moment the acks have left the client process,
 * not before (acks still in amqplib when the socket dies were never sent).
 */
const destroySocket: Finish = (connection) => {
  const { stream, channels } = (connection as unknown as AmqplibInternals).connection;
  const sent = (): boolean => stream.writableLength === 0 && channels.every((entry) => entry === null || entry.buffer.readableLength === 0);
  void until(sent, 'amqplib to write the acks to the socket').then(() => stream.destroy());
};

async function scenario(total: number, prefetch: number, ackCount: number, finish: Finish): Promise<void> {
  const data = tempDirectory('cairn-acks-close-');
  cleanups.push(() => data.remove());
  const cairn = await startBroker(data.path);
  await fill(cairn, total);
  await consumeAndFinish(cairn, prefetch, ackCount, finish);
  await expectLiveCount(cairn, total, ackCount);
  expect(await countAfterRestart(cairn, data.path), 'after a restart on the same data directory').toBe(total - ackCount);
}

/** A raw client on channel 1 that has taken `count` deliveries (prefetch `count`) and holds their tags. */
async function rawConsumer(cairn: RunningCairn, count: number): Promise<{ raw: RawClient; tags: number[] }> {
  const raw = await RawClient.connect(cairn.amqpPort!);
  cleanups.push(() => raw.destroy());
  await raw.handshake();
  await raw.openChannel(1);
  raw.send(1, { name: 'basic.qos', prefetchSize: 0, prefetchCount: count, global: false });
  await raw.expect('basic.qos-ok');
  raw.send(1, { name: 'basic.consume', queue, consumerTag: 'raw', noLocal: false, noAck: false, exclusive: false, noWait: false, arguments: {} });
  await raw.expect('basic.consume-ok');
  const tags: number[] = [];
  while (tags.length < count) {
    const frame = await raw.nextFrame();
    if (frame.type !== FRAME_TYPE.METHOD) continue;
    const method = decodeMethod(frame.payload);
    if (method.name === 'basic.deliver') tags.push(method.deliveryTag);
  }
  return { raw, tags };
}

/** Skips what is still buffered from the deliveries (content frames included) up to the method named. */
async function nextMethodNamed(raw: RawClient, name: string): Promise<void> {
  for (;;) {
    const frame = await raw.nextFrame();
    if (frame.type === FRAME_TYPE.METHOD && decodeMethod(frame.payload).name === name) return;
  }
}

const connectionClose = encodeMethodFrame(0, { name: 'connection.close', replyCode: 200, replyText: 'bye', failedClassId: 0, failedMethodId: 0 });

const ackFrames = (tags: readonly number[]): Buffer => Buffer.concat(tags.map((deliveryTag) => encodeMethodFrame(1, { name: 'basic.ack', deliveryTag, multiple: false })));

/** Publish `total`, let a raw consumer take `taken`, write `bytes(tags)` in one write; `settled` of them must never come back. */
async function rawScenario(total: number, taken: number, settled: number, write: (raw: RawClient, tags: readonly number[]) => void | Promise<void>): Promise<void> {
  const data = tempDirectory('cairn-acks-close-');
  cleanups.push(() => data.remove());
  const cairn = await startBroker(data.path);
  await fill(cairn, total);
  const { raw, tags } = await rawConsumer(cairn, taken);
  await write(raw, tags);
  await expectLiveCount(cairn, total, settled);
  expect(await countAfterRestart(cairn, data.path), 'after a restart on the same data directory').toBe(total - settled);
}

describe('AMQP acks received before a close are applied before the requeue', () => {
  it('5,000 persistent messages, prefetch 500, connection.close after 2,500 acks: 2,500 remain, live and after restart', async () => {
    await scenario(5_000, 500, 2_500, closeConnection);
  }, 60_000);

  it('acks immediately followed by channel.close', async () => {
    await scenario(400, 200, 150, closeChannel);
  }, 30_000);

  it('acks immediately followed by connection.close', async () => {
    await scenario(400, 200, 150, closeConnection);
  }, 30_000);

  it('acks immediately followed by the socket being destroyed', async () => {
    await scenario(400, 200, 150, destroySocket);
  }, 30_000);

  it('a raw socket: acks, then FIN, in one write', async () => {
    await rawScenario(300, 100, 100, (raw, tags) => void raw.socket.end(ackFrames(tags)));
  }, 30_000);

  it('a raw socket: acks, a nack without requeue, a reject and connection.close in one write', async () => {
    await rawScenario(300, 100, 100, (raw, tags) => {
      raw.write(Buffer.concat([
        ackFrames(tags.slice(0, 98)),
        encodeMethodFrame(1, { name: 'basic.nack', deliveryTag: tags[98]!, multiple: false, requeue: false }),
        encodeMethodFrame(1, { name: 'basic.reject', deliveryTag: tags[99]!, requeue: false }),
        connectionClose,
      ]));
    });
  }, 30_000);

  it('a raw socket: connection.close, then acks the client had queued (as amqplib writes them), then FIN', async () => {
    await rawScenario(300, 100, 100, (raw, tags) => {
      raw.socket.end(Buffer.concat([connectionClose, ackFrames(tags)]));
    });
  }, 30_000);

  it('a raw socket: acks sent before the client saw the channel.close its bad publish caused still count', async () => {
    await rawScenario(300, 100, 100, async (raw, tags) => {
      raw.sendMessage(1, { name: 'basic.publish', exchange: 'missing', routingKey: 'k', mandatory: false, immediate: false }, Buffer.from('x'));
      raw.write(ackFrames(tags));
      await nextMethodNamed(raw, 'channel.close');
      raw.send(1, { name: 'channel.close-ok' });
    });
  }, 30_000);
});
