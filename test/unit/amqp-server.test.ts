/**
 * The AMQP connection layer at the byte level: a raw client built on Cairn's
 * own codec talks to the real server and Broker over loopback, to check what
 * a well-behaved library never sends and what it cannot observe — protocol
 * header negotiation, garbage, oversized and misplaced frames, unopened
 * channels, vhosts, SASL, heartbeats, closing handshakes, the exact confirm
 * frames (order, multiple=true, nack on a failed log) and back-pressure.
 */
import amqp from 'amqplib';
import { Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { hashPassword, parseUsersFile, type Users } from '../../src/auth/users.js';
import { Broker } from '../../src/core/broker.js';
import { MemoryLog, type CoreAppendRecord } from '../../src/core/record-log.js';
import { silentLogger } from '../../src/logger.js';
import {
  CLASS_ID, decodeMethod, encodeFieldTable, encodeFrame, encodeProperties, FRAME_TYPE,
} from '../../src/protocols/amqp/codec/index.js';
import type { AmqpLimits } from '../../src/protocols/amqp/limits.js';
import { startAmqpServer, type AmqpServer } from '../../src/protocols/amqp/server.js';
import { RawClient } from '../support/amqp-raw-client.js';

// ───────────────────────────── a log whose fsyncs the test releases ─────────────────────────────

class GatedLog extends MemoryLog {
  holding = false;
  readonly held: Array<{ release: () => void; fail: (error: Error) => void }> = [];

  override append(records: readonly CoreAppendRecord[]): Promise<number[]> {
    const appended = super.append(records);
    if (!this.holding) return appended;
    return new Promise((resolve, reject) => {
      this.held.push({ release: () => resolve(appended), fail: reject });
    });
  }

  releaseAll(): void {
    for (const entry of this.held.splice(0)) entry.release();
  }
}

// ───────────────────────────── fixture ─────────────────────────────

const servers: AmqpServer[] = [];
const clients: RawClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy();
  for (const server of servers.splice(0)) await server.close();
});

async function start(options: { limits?: Partial<AmqpLimits>; users?: Users; log?: MemoryLog } = {}): Promise<{ server: AmqpServer; broker: Broker }> {
  const broker = Broker.open({ log: options.log ?? new MemoryLog() });
  const server = await startAmqpServer({
    core: broker.amqp, host: '127.0.0.1', port: 0, logger: silentLogger(),
    ...(options.limits ? { limits: options.limits } : {}), ...(options.users ? { users: options.users } : {}),
  });
  servers.push(server);
  return { server, broker };
}

async function client(server: AmqpServer): Promise<RawClient> {
  const raw = await RawClient.connect(server.port);
  clients.push(raw);
  return raw;
}

async function openClient(server: AmqpServer, channel = 1): Promise<RawClient> {
  const raw = await client(server);
  await raw.handshake();
  await raw.openChannel(channel);
  return raw;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const persistent = encodeProperties({ deliveryMode: 2 });

// ───────────────────────────── tests ─────────────────────────────

describe('AMQP protocol header negotiation [spec 4.2.2]', () => {
  it.each([
    ['AMQP 0-10', Buffer.from('AMQP\u0001\u0001\u0000\u000a', 'latin1')],
    ['AMQP 0-9-0', Buffer.from('AMQP\u0000\u0000\u0009\u0000', 'latin1')],
    ['HTTP', Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')],
  ])('a %s header gets AMQP 0 0 9 1 back and a close', async (_name, header) => {
    const { server } = await start();
    const raw = await client(server);
    raw.write(header);
    await raw.waitClosed();
    expect(Buffer.concat(raw.bytes)).toEqual(Buffer.from('AMQP\u0000\u0000\u0009\u0001', 'latin1'));
  });

  it('connection.start names Cairn, its capabilities and PLAIN / AMQPLAIN', async () => {
    const { server } = await start();
    const raw = await client(server);
    raw.sendHeader();
    const greeting = await raw.expect('connection.start');
    expect([greeting.versionMajor, greeting.versionMinor]).toEqual([0, 9]);
    expect(greeting.mechanisms.toString()).toBe('PLAIN AMQPLAIN');
    expect(greeting.serverProperties['product']).toEqual({ type: 'S', value: 'Cairn' });
    const capabilities = greeting.serverProperties['capabilities'];
    expect(capabilities?.type).toBe('F');
    if (capabilities?.type !== 'F') return;
    expect(capabilities.value).toMatchObject({
      publisher_confirms: { type: 't', value: true },
      'basic.nack': { type: 't', value: true },
      consumer_cancel_notify: { type: 't', value: true },
      exchange_exchange_bindings: { type: 't', value: true },
      per_consumer_qos: { type: 't', value: true },
      authentication_failure_close: { type: 't', value: true },
      'connection.blocked': { type: 't', value: true },
    });
  });
});

describe('AMQP tune and open', () => {
  it('proposes frame-max and channel-max, and applies the lower frame-max of the client', async () => {
    const { server } = await start();
    const raw = await client(server);
    const tune = await raw.handshake({ frameMax: 8192 });
    expect(tune).toMatchObject({ frameMax: 131_072, channelMax: 2047, heartbeat: 60 });
    await raw.openChannel(1);
    // A frame over the negotiated 8192 is now a frame error.
    raw.write(encodeFrame(FRAME_TYPE.BODY, 1, Buffer.alloc(9000)));
    const close = await raw.expect('connection.close');
    expect(close.replyCode).toBe(501);
    await raw.waitClosed();
  });

  it('refuses a frame-max below 4096 with 530', async () => {
    const { server } = await start();
    const raw = await client(server);
    raw.sendHeader();
    await raw.expect('connection.start');
    raw.send(0, { name: 'connection.start-ok', clientProperties: {}, mechanism: 'PLAIN', response: Buffer.from('\u0000a\u0000b'), locale: 'en_US' });
    await raw.expect('connection.tune');
    raw.send(0, { name: 'connection.tune-ok', channelMax: 0, frameMax: 1024, heartbeat: 0 });
    expect((await raw.expect('connection.close')).replyCode).toBe(530);
  });

  it('opens only the vhost "/": another one gets 530 NOT_ALLOWED', async () => {
    const { server } = await start();
    const raw = await client(server);
    await raw.handshake({ vhost: 'production' });
    const close = await raw.expect('connection.close');
    expect(close.replyCode).toBe(530);
    expect(close.replyText).toMatch(/NOT_ALLOWED - access to vhost 'production' refused/);
    await raw.waitClosed();
  });

  it('a clean connection.close is answered with close-ok and the socket closes', async () => {
    const { server } = await start();
    const raw = await openClient(server);
    raw.send(0, { name: 'connection.close', replyCode: 200, replyText: 'bye', failedClassId: 0, failedMethodId: 0 });
    await raw.expect('connection.close-ok');
    await raw.waitClosed();
    await sleep(10);
    expect(server.connections()).toBe(0);
  });
});

describe('AMQP authentication', () => {
  async function usersWithAlice(): Promise<Users> {
    const password = await hashPassword('s3cret');
    return parseUsersFile(JSON.stringify({ users: [{ username: 'alice', password }] }), 'test');
  }

  it('PLAIN with a wrong password is refused: connection.close 403 ACCESS_REFUSED', async () => {
    const { server } = await start({ users: await usersWithAlice() });
    const raw = await client(server);
    raw.sendHeader();
    await raw.expect('connection.start');
    raw.send(0, { name: 'connection.start-ok', clientProperties: {}, mechanism: 'PLAIN', response: Buffer.from('\u0000alice\u0000wrong'), locale: 'en_US' });
    const close = await raw.expect('connection.close');
    expect(close.replyCode).toBe(403);
    expect(close.replyText).toMatch(/^ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN/);
    // This server's logger is silent: the text must not send the client to a log that shows nothing.
    expect(close.replyText).not.toContain('see the broker logfile');
    await raw.waitClosed();
  });

  it('PLAIN (amqplib) and AMQPLAIN (raw) with the right password are let in; amqplib with a wrong one gets ACCESS_REFUSED', async () => {
    const { server } = await start({ users: await usersWithAlice() });
    const good = await amqp.connect(`amqp://alice:s3cret@127.0.0.1:${server.port}`);
    await good.close();
    await expect(amqp.connect(`amqp://alice:nope@127.0.0.1:${server.port}`)).rejects.toThrow(/ACCESS_REFUSED|403/);
    const raw = await client(server);
    const table = encodeFieldTable({ LOGIN: { type: 'S', value: 'alice' }, PASSWORD: { type: 'S', value: 's3cret' } });
    await raw.handshake({ mechanism: 'AMQPLAIN', response: table.subarray(4) });
  });

  it('an unknown SASL mechanism is refused with 403', async () => {
    const { server } = await start();
    const raw = await client(server);
    raw.sendHeader();
    await raw.expect('connection.start');
    raw.send(0, { name: 'connection.start-ok', clientProperties: {}, mechanism: 'EXTERNAL', response: Buffer.alloc(0), locale: 'en_US' });
    const close = await raw.expect('connection.close');
    expect(close.replyCode).toBe(403);
    expect(close.replyText).toMatch(/supported: PLAIN AMQPLAIN/);
  });
});

describe('AMQP malformed and misplaced input', () => {
  it('garbage after the handshake closes that connection with 501; the server still serves another client', async () => {
    const { server } = await start();
    const raw = await openClient(server);
    raw.write(Buffer.from('this is not an AMQP frame at all\r\n'));
    const close = await raw.expect('connection.close');
    expect(close.replyCode).toBe(501);
    await raw.waitClosed();
    const other = await amqp.connect(`amqp://127.0.0.1:${server.port}`);
    const channel = await other.createChannel();
    await channel.assertQueue('alive', { durable: false });
    channel.sendToQueue('alive', Buffer.from('yes'));
    const message = await channel.get('alive', { noAck: true });
    expect(message && message.content.toString()).toBe('yes');
    await other.close();
  });

  it('a frame on a channel that was never opened is 504 CHANNEL_ERROR', async () => {
    const { server } = await start();
    const raw = await client(server);
    await raw.handshake();
    raw.send(7, { name: 'queue.declare', queue: 'q', passive: false, durable: false, exclusive: false, autoDelete: false, noWait: false, arguments: {} });
    const close = await raw.expect('connection.close');
    expect([close.replyCode, close.failedClassId, close.failedMethodId]).toEqual([504, CLASS_ID.QUEUE, 10]);
    expect(close.replyText).toMatch(/expected 'channel.open' on channel 7/);
  });

  it('a second channel.open on an open channel is 504', async () => {
    const { server } = await start();
    const raw = await openClient(server);
    raw.send(1, { name: 'channel.open' });
    expect((await raw.expect('connection.close')).replyCode).toBe(504);
  });

  it('an unknown method is 540 NOT_IMPLEMENTED on the connection, naming its ids', async () => {
    const { server } = await start();
    const raw = await openClient(server);
    const payload = Buffer.from([0, 99, 0, 1]);
    raw.write(encodeFrame(FRAME_TYPE.METHOD, 1, payload));
    const close = await raw.expect('connection.close');
    expect([close.replyCode, close.failedClassId, close.failedMethodId]).toEqual([540, 99, 1]);
  });

  it('a server-only method sent by the client is 503 COMMAND_INVALID', async () => {
    const { server } = await start();
    const raw = await openClient(server);
    raw.send(1, { name: 'basic.get-empty' });
    expect((await raw.expect('connection.close')).replyCode).toBe(503);
  });

  it('a content header without basic.publish, or a body beyond body-size, is 505 UNEXPECTED_FRAME', async () => {
    const { server } = await start();
    const first = await openClient(server);
    first.write(encodeFrame(FRAME_TYPE.HEADER, 1, Buffer.from([0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0])));
    expect((await first.expect('connection.close')).replyCode).toBe(505);

    const second = await openClient(server);
    second.send(1, { name: 'basic.publish', exchange: '', routingKey: 'q', mandatory: false, immediate: false });
    second.write(encodeFrame(FRAME_TYPE.HEADER, 1, Buffer.from([0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0])));
    second.write(encodeFrame(FRAME_TYPE.BODY, 1, Buffer.from('three')));
    expect((await second.expect('connection.close')).replyCode).toBe(505);
  });

  it('a message over messageBytesMax closes the channel with 406; its body frames are discarded', async () => {
    const { server } = await start({ limits: { messageBytesMax: 1000 } });
    const raw = await openClient(server);
    raw.sendMessage(1, { name: 'basic.publish', exchange: '', routingKey: 'q', mandatory: false, immediate: false }, Buffer.alloc(5000));
    const close = await raw.expect('channel.close');
    expect(close.replyCode).toBe(406);
    expect(close.replyText).toMatch(/message size 5000 is larger than configured max size 1000/);
    raw.send(1, { name: 'channel.close-ok' });
    await raw.openChannel(1);
  });
});

describe('AMQP channel errors and unsupported methods', () => {
  it('tx.select on a channel in confirm mode is refused with channel.close 406; frames are ignored until close-ok; the number is reusable', async () => {
    const { server } = await start();
    const raw = await openClient(server);
    raw.send(1, { name: 'confirm.select', noWait: false });
    await raw.expect('confirm.select-ok');
    raw.send(1, { name: 'tx.select' });
    const close = await raw.expect('channel.close');
    expect([close.channel, close.replyCode, close.failedClassId, close.failedMethodId]).toEqual([1, 406, CLASS_ID.TX, 10]);
    expect(close.replyText).toMatch(/PRECONDITION_FAILED - cannot switch from confirm to tx mode/);
    // Spec 2.2.4: until close-ok, everything else on the channel is discarded.
    raw.send(1, { name: 'basic.qos', prefetchSize: 0, prefetchCount: 1, global: false });
    raw.sendMessage(1, { name: 'basic.publish', exchange: 'missing', routingKey: 'k', mandatory: false, immediate: false }, Buffer.from('x'));
    raw.send(1, { name: 'channel.close-ok' });
    await raw.openChannel(1);
    raw.send(1, { name: 'basic.qos', prefetchSize: 0, prefetchCount: 1, global: false });
    await raw.expect('basic.qos-ok');
  });

  it('exchange.bind to a missing destination exchange is a 404 channel error; to an existing one, bind-ok', async () => {
    const { server } = await start();
    const raw = await openClient(server);
    raw.send(1, { name: 'exchange.bind', destination: 'amq.fanout', source: 'amq.topic', routingKey: '#', noWait: false, arguments: {} });
    await raw.expect('exchange.bind-ok');
    raw.send(1, { name: 'exchange.bind', destination: 'a', source: 'amq.topic', routingKey: '#', noWait: false, arguments: {} });
    const close = await raw.expect('channel.close');
    expect([close.replyCode, close.failedClassId, close.failedMethodId]).toEqual([404, CLASS_ID.EXCHANGE, 30]);
  });

  it('deliveries follow consume-ok, with a server-generated consumer tag', async () => {
    const { server } = await start();
    const raw = await openClient(server);
    raw.send(1, { name: 'queue.declare', queue: 'ready', passive: false, durable: false, exclusive: false, autoDelete: false, noWait: false, arguments: {} });
    await raw.expect('queue.declare-ok');
    raw.sendMessage(1, { name: 'basic.publish', exchange: '', routingKey: 'ready', mandatory: false, immediate: false }, Buffer.from('waiting'));
    raw.send(1, { name: 'basic.consume', queue: 'ready', consumerTag: '', noLocal: false, noAck: true, exclusive: false, noWait: false, arguments: {} });
    const ok = await raw.expect('basic.consume-ok');
    expect(ok.consumerTag).toMatch(/^amq\.ctag-/);
    const deliver = await raw.expect('basic.deliver');
    expect([deliver.consumerTag, deliver.deliveryTag, deliver.redelivered]).toEqual([ok.consumerTag, 1, false]);
  });
});

describe('AMQP publisher confirms on the wire', () => {
  async function confirmClient(server: AmqpServer): Promise<RawClient> {
    const raw = await openClient(server);
    raw.send(1, { name: 'confirm.select', noWait: false });
    await raw.expect('confirm.select-ok');
    raw.send(1, { name: 'queue.declare', queue: 'ledger', passive: false, durable: true, exclusive: false, autoDelete: false, noWait: false, arguments: {} });
    await raw.expect('queue.declare-ok');
    return raw;
  }

  const publish = (raw: RawClient, routingKey: string, mandatory = false, properties = persistent): void => {
    raw.sendMessage(1, { name: 'basic.publish', exchange: '', routingKey, mandatory, immediate: false }, Buffer.from('entry'), properties);
  };

  /** Publishes with the log's fsyncs held, and waits until the server has taken them all. */
  async function publishWhileHeld(raw: RawClient, log: GatedLog, publishes: () => void): Promise<void> {
    log.holding = true;
    publishes();
    // The server handles a channel's frames in order: once basic.qos is answered it has taken every publish
    // (a 50 ms sleep here was too short on a loaded machine: the third arrived after the release, acked alone).
    raw.send(1, { name: 'basic.qos', prefetchSize: 0, prefetchCount: 0, global: false });
    await raw.expect('basic.qos-ok');
    expect(raw.pendingFrames).toBe(0);
    expect(log.held.length).toBeGreaterThan(0);
  }

  it('acks only after the log is durable, in order, coalesced with multiple=true', async () => {
    const log = new GatedLog();
    const { server } = await start({ log });
    const raw = await confirmClient(server);
    await publishWhileHeld(raw, log, () => {
      publish(raw, 'ledger');
      publish(raw, 'ledger');
      publish(raw, 'ledger', false, encodeProperties({ deliveryMode: 1 })); // transient: ready at once, but must wait for 1 and 2
    });
    log.releaseAll();
    const ack = await raw.expect('basic.ack');
    expect([ack.deliveryTag, ack.multiple]).toEqual([3, true]);
  });

  it('a lone durable confirm is written at once: no cork, no tick to uncork it', async () => {
    const log = new GatedLog();
    const { server } = await start({ log });
    const raw = await confirmClient(server);
    await publishWhileHeld(raw, log, () => publish(raw, 'ledger'));
    const cork = vi.spyOn(Socket.prototype, 'cork');
    try {
      log.releaseAll();
      const ack = await raw.expect('basic.ack');
      expect([ack.deliveryTag, ack.multiple]).toEqual([1, false]);
      expect(cork).toHaveBeenCalledTimes(0);
    } finally {
      cork.mockRestore();
    }
  });

  it('a mandatory unroutable publish gets basic.return 312 NO_ROUTE, then its ack', async () => {
    const { server } = await start();
    const raw = await confirmClient(server);
    publish(raw, 'nowhere', true);
    const returned = await raw.expect('basic.return');
    expect([returned.replyCode, returned.replyText, returned.routingKey]).toEqual([312, 'NO_ROUTE', 'nowhere']);
    const header = await raw.nextFrame();
    expect(header.type).toBe(FRAME_TYPE.HEADER);
    const body = await raw.nextFrame();
    expect(body.payload.toString()).toBe('entry');
    const ack = await raw.expect('basic.ack');
    expect([ack.deliveryTag, ack.multiple]).toEqual([1, false]);
  });

  it('a publish the log fails to make durable is nacked', async () => {
    const log = new GatedLog();
    const { server } = await start({ log });
    const raw = await confirmClient(server);
    log.holding = true;
    publish(raw, 'ledger');
    await sleep(20);
    for (const entry of log.held.splice(0)) entry.fail(new Error('EIO: fsync failed'));
    const nack = await raw.expect('basic.nack');
    expect([nack.deliveryTag, nack.multiple]).toEqual([1, false]);
  });
});

describe('AMQP heartbeats', () => {
  it('sends heartbeats at the negotiated interval and drops a client silent for two intervals, not one that talks', async () => {
    const { server } = await start();
    const silent = await client(server);
    const talking = await client(server);
    await silent.handshake({ heartbeat: 1 });
    await talking.handshake({ heartbeat: 1 });
    const beating = setInterval(() => talking.write(encodeFrame(FRAME_TYPE.HEARTBEAT, 0, Buffer.alloc(0))), 400);
    try {
      const started = Date.now();
      const frame = await silent.nextFrame(1_500);
      expect(frame.type).toBe(FRAME_TYPE.HEARTBEAT);
      await silent.waitClosed(4_000);
      const silentMs = Date.now() - started;
      expect(silentMs).toBeGreaterThanOrEqual(1_400);
      expect(silentMs).toBeLessThan(3_500);
      await sleep(50);
      expect(talking.closed).toBe(false);
      expect(server.connections()).toBe(1);
    } finally {
      clearInterval(beating);
    }
  });
});

describe('AMQP back-pressure', () => {
  it('stops delivering to a consumer whose socket is congested, and resumes on drain', async () => {
    const { server } = await start({ limits: { frameMaxBytes: 4096, writeBufferHighWaterBytes: 4096 } });
    const raw = await openClient(server);
    raw.send(1, { name: 'queue.declare', queue: 'flood', passive: false, durable: false, exclusive: false, autoDelete: false, noWait: false, arguments: {} });
    await raw.expect('queue.declare-ok');
    raw.send(1, { name: 'basic.consume', queue: 'flood', consumerTag: 'slow-reader', noLocal: false, noAck: true, exclusive: false, noWait: false, arguments: {} });
    await raw.expect('basic.consume-ok');
    raw.socket.pause();

    const publisher = await amqp.connect(`amqp://127.0.0.1:${server.port}`);
    const channel = await publisher.createConfirmChannel();
    const messages = 1500;
    const body = Buffer.alloc(16 * 1024, 7);
    for (let index = 0; index < messages; index++) channel.sendToQueue('flood', body);
    await channel.waitForConfirms();
    const { messageCount: waiting } = await channel.checkQueue('flood');
    expect(waiting).toBeGreaterThan(0);

    raw.socket.resume();
    let delivered = 0;
    while (delivered < messages) {
      const frame = await raw.nextFrame(5_000);
      if (frame.type === FRAME_TYPE.METHOD && decodeMethod(frame.payload).name === 'basic.deliver') delivered++;
    }
    expect((await channel.checkQueue('flood')).messageCount).toBe(0);
    await publisher.close();
  });
});
