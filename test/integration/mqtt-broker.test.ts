/**
 * The MQTT front end against the real broker on the real segmented log (a
 * data directory under the OS temp dir), driven by MQTT.js (a real,
 * unmodified client) over TCP, plus raw-socket tests for what MQTT.js will not
 * do on purpose (resend a QoS 2 PUBLISH with DUP before PUBREL, publish to a
 * wildcard topic).
 *
 * Covered: the article's retained home/+/temp example with its exact output,
 * QoS 0/1/2 in both directions, persistent sessions (offline queue,
 * session_present) also across a broker restart, clean sessions discarding
 * state, takeover, wills on an abnormal close and not after DISCONNECT,
 * CONNACK 4 and 5, the QoS 2 DUP resend, and a failing fdatasync closing the
 * connection without PUBACK.
 */
import * as fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { generate, parser as createParser, type IConnackPacket, type IPublishPacket, type Packet } from 'mqtt-packet';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hashPassword, parseUsersFile, type Users } from '../../src/auth/users.js';
import { Broker } from '../../src/core/broker.js';
import { nodeFileSystem, SegmentedLog, type LogFileSystem } from '../../src/log/index.js';
import { silentLogger } from '../../src/logger.js';
import { startMqttServer, type MqttServer } from '../../src/protocols/mqtt/server.js';

/** The real file system, with a switch that makes every fdatasync fail with EIO. */
const fileSystem: LogFileSystem & { failSync: boolean } = {
  ...nodeFileSystem,
  failSync: false,
  fdatasync(fd, callback) {
    if (this.failSync) setImmediate(() => callback(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })));
    else fs.fdatasync(fd, callback);
  },
};

let dataDir: string;
let log: SegmentedLog;
let broker: Broker;
let server: MqttServer;
const clients: MqttClient[] = [];
const sockets: Socket[] = [];

async function boot(users?: Users): Promise<void> {
  log = await SegmentedLog.open({ dir: dataDir, logger: silentLogger(), fileSystem });
  broker = Broker.open({ log, logger: silentLogger() });
  server = await startMqttServer({ core: broker.mqtt, host: '127.0.0.1', port: 0, logger: silentLogger(), ...(users ? { users } : {}) });
}

async function shutDown(): Promise<void> {
  await server.close();
  await broker.flush();
  await log.close().catch(() => undefined);
}

/** Stop and start the broker on the same data directory: everything comes back by replay. */
async function restart(users?: Users): Promise<void> {
  await shutDown();
  await boot(users);
}

beforeEach(async () => {
  fileSystem.failSync = false;
  dataDir = await mkdtemp(join(tmpdir(), 'cairn-mqtt-'));
  await boot();
});

afterEach(async () => {
  for (const client of clients.splice(0)) client.end(true);
  for (const socket of sockets.splice(0)) socket.destroy();
  await shutDown();
  await rm(dataDir, { recursive: true, force: true });
});

/** Connect with MQTT.js; resolves with the client and its CONNACK, rejects with the refusal. */
function open(clientId: string, options: IClientOptions = {}): Promise<{ client: MqttClient; connack: IConnackPacket }> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${server.port}`, { clientId, protocolVersion: 4, reconnectPeriod: 0, connectTimeout: 5_000, ...options });
  clients.push(client);
  return new Promise((resolve, reject) => {
    client.once('connect', (connack) => resolve({ client, connack }));
    client.once('error', reject);
  });
}

/** Collect "topic payload" lines (the mosquitto_sub -v format) and the packets. */
function collect(client: MqttClient): { lines: string[]; packets: IPublishPacket[] } {
  const lines: string[] = [];
  const packets: IPublishPacket[] = [];
  client.on('message', (topic, payload, packet) => {
    lines.push(`${topic} ${payload.toString()}`);
    packets.push(packet);
  });
  return { lines, packets };
}

async function until(condition: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function within<T>(timeoutMs: number, promise: Promise<T>): Promise<T> {
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not settled within ${timeoutMs} ms`)), timeoutMs));
  return Promise.race([promise, timeout]);
}

const settle = (ms = 100): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** mosquitto_pub: connect, publish, wait for the ack, disconnect. */
async function publishOnce(topic: string, message: string, options: { qos: 0 | 1 | 2; retain?: boolean }): Promise<void> {
  const { client } = await open(`pub-${Math.random().toString(36).slice(2)}`);
  await client.publishAsync(topic, message, { qos: options.qos, retain: options.retain ?? false });
  await client.endAsync();
}

describe('the article, over MQTT.js', () => {
  it('delivers retained values on subscribe, then live ones: home/+/temp', async () => {
    await publishOnce('home/livingroom/temp', '22.4', { qos: 1, retain: true });
    await publishOnce('home/kitchen/temp', '24.1', { qos: 1, retain: true });
    const { client: sub } = await open('sub');
    const { lines, packets } = collect(sub);
    await sub.subscribeAsync('home/+/temp', { qos: 1 });
    await publishOnce('home/bedroom/temp', '19.8', { qos: 1 });
    await publishOnce('home/bedroom/humidity', '55', { qos: 1 });
    await until(() => lines.length >= 3);
    await settle();
    expect(lines).toEqual(['home/livingroom/temp 22.4', 'home/kitchen/temp 24.1', 'home/bedroom/temp 19.8']);
    // Retained on subscription, not retained when delivered live [MQTT-3.3.1-8] [MQTT-3.3.1-9].
    expect(packets.map((packet) => packet.retain)).toEqual([true, true, false]);
  });

  it('runs QoS 0, 1 and 2 in both directions, downgrading to the subscription QoS', async () => {
    const { client: billing } = await open('billing');
    const { client: audit } = await open('audit');
    const billed = collect(billing);
    const audited = collect(audit);
    expect(await billing.subscribeAsync('meter/+/kwh', { qos: 2 })).toEqual([{ topic: 'meter/+/kwh', qos: 2 }]);
    await audit.subscribeAsync('meter/#', { qos: 1 });
    const { client: meter } = await open('meter-42');
    await meter.publishAsync('meter/42/kwh', '1532.5', { qos: 0 });
    await meter.publishAsync('meter/42/kwh', '1532.6', { qos: 1 });
    await meter.publishAsync('meter/42/kwh', '1532.7', { qos: 2 });
    await until(() => billed.lines.length === 3 && audited.lines.length === 3);
    expect(billed.lines).toEqual(['meter/42/kwh 1532.5', 'meter/42/kwh 1532.6', 'meter/42/kwh 1532.7']);
    expect(billed.packets.map((packet) => packet.qos)).toEqual([0, 1, 2]);
    expect(audited.packets.map((packet) => packet.qos)).toEqual([0, 1, 1]);
    await settle();
    // Every outbound QoS 1/2 flow was finished by the subscribers' PUBACK / PUBREC+PUBCOMP.
    for (const id of ['billing', 'audit']) expect(broker.sessions.get(id)?.state.pending.size).toBe(0);
  });
});

describe('sessions', () => {
  it('keeps a persistent session across a disconnect: offline queue in order, session_present', async () => {
    const first = await open('cold-room-worker', { clean: false });
    expect(first.connack.sessionPresent).toBe(false);
    expect(await first.client.subscribeAsync('plant/+/alarm', { qos: 1 })).toEqual([{ topic: 'plant/+/alarm', qos: 1 }]);
    await first.client.endAsync();

    await publishOnce('plant/room1/alarm', '{"seq": 1, "temp_c": -12.5}', { qos: 1 });
    await publishOnce('plant/room2/alarm', '{"seq": 2, "temp_c": -3.1}', { qos: 1 });
    await publishOnce('plant/room1/alarm', '{"seq": 3, "temp_c": 4.8}', { qos: 1 });

    const client = mqtt.connect(`mqtt://127.0.0.1:${server.port}`, { clientId: 'cold-room-worker', clean: false, protocolVersion: 4, reconnectPeriod: 0 });
    clients.push(client);
    const { lines, packets } = collect(client);
    const connack = await new Promise<IConnackPacket>((resolve) => client.once('connect', resolve));
    expect(connack.sessionPresent).toBe(true);
    await until(() => lines.length === 3);
    expect(lines).toEqual([
      'plant/room1/alarm {"seq": 1, "temp_c": -12.5}',
      'plant/room2/alarm {"seq": 2, "temp_c": -3.1}',
      'plant/room1/alarm {"seq": 3, "temp_c": 4.8}',
    ]);
    expect(packets.map((packet) => [packet.qos, packet.dup])).toEqual([[1, false], [1, false], [1, false]]);
    await until(() => broker.sessions.get('cold-room-worker')?.state.pending.size === 0);
  });

  it('brings back a persistent session, its queue and retained values after a broker restart', async () => {
    const worker = await open('cold-room-worker', { clean: false });
    await worker.client.subscribeAsync('plant/+/alarm', { qos: 1 });
    await worker.client.endAsync();
    await publishOnce('plant/room1/alarm', '{"seq": 1}', { qos: 1 });
    await publishOnce('plant/room2/alarm', '{"seq": 2}', { qos: 1 });
    await publishOnce('plant/status', 'online', { qos: 1, retain: true });

    await restart();
    expect(broker.recovery).toMatchObject({ sessions: 1, pendingMessages: 2 });

    const client = mqtt.connect(`mqtt://127.0.0.1:${server.port}`, { clientId: 'cold-room-worker', clean: false, protocolVersion: 4, reconnectPeriod: 0 });
    clients.push(client);
    const { lines } = collect(client);
    const connack = await new Promise<IConnackPacket>((resolve) => client.once('connect', resolve));
    expect(connack.sessionPresent).toBe(true);
    await until(() => lines.length === 2);
    expect(lines).toEqual(['plant/room1/alarm {"seq": 1}', 'plant/room2/alarm {"seq": 2}']);

    const { client: dashboard } = await open('dashboard');
    const dashboardLines = collect(dashboard).lines;
    await dashboard.subscribeAsync('plant/status', { qos: 1 });
    await until(() => dashboardLines.length === 1);
    expect(dashboardLines).toEqual(['plant/status online']);
  });

  it('discards a stored session on clean_session=1 [MQTT-3.1.2-6]', async () => {
    const first = await open('temp', { clean: false });
    await first.client.subscribeAsync('news/#', { qos: 1 });
    await first.client.endAsync();

    const clean = await open('temp', { clean: true });
    expect(clean.connack.sessionPresent).toBe(false);
    const { lines } = collect(clean.client);
    await publishOnce('news/today', 'nobody listens', { qos: 1 });
    await settle();
    expect(lines).toEqual([]);
    await clean.client.endAsync();

    const again = await open('temp', { clean: false });
    expect(again.connack.sessionPresent).toBe(false);
  });

  it('lets a second CONNECT with the same client id take over [MQTT-3.1.4-2], publishing the old connection\'s will [MQTT-3.1.2-8]', async () => {
    const { client: watcher } = await open('watcher');
    const watched = collect(watcher);
    await watcher.subscribeAsync('status/#', { qos: 1 });
    const old = await open('same-id', { clean: false, will: { topic: 'status/same-id', payload: Buffer.from('lost'), qos: 1, retain: false } });
    const oldClosed = new Promise<void>((resolve) => old.client.once('close', () => resolve()));
    const fresh = await open('same-id', { clean: false });
    await oldClosed;
    const { lines } = collect(fresh.client);
    await fresh.client.subscribeAsync('after/takeover', { qos: 1 });
    await publishOnce('after/takeover', 'hello', { qos: 1 });
    await until(() => lines.length === 1);
    expect(lines).toEqual(['after/takeover hello']);
    await until(() => watched.lines.length === 1);
    expect(watched.lines).toEqual(['status/same-id lost']);
    // Published once: a marker sent after it arrives right after it.
    await publishOnce('status/marker', 'm', { qos: 1 });
    await until(() => watched.lines.length === 2);
    expect(watched.lines).toEqual(['status/same-id lost', 'status/marker m']);
  });
});

describe('wills', () => {
  it('publishes the will on an abnormal close, and not after DISCONNECT', async () => {
    const { client: watcher } = await open('watcher');
    const { lines, packets } = collect(watcher);
    await watcher.subscribeAsync('devices/+/status', { qos: 1 });
    const will = (id: string) => ({ topic: `devices/${id}/status`, payload: Buffer.from('offline'), qos: 1 as const, retain: true });

    const polite = await open('polite', { will: will('polite') });
    await polite.client.endAsync();
    const rude = await open('rude', { will: will('rude') });
    rude.client.stream.destroy();
    await until(() => lines.length === 1);
    await settle();
    expect(lines).toEqual(['devices/rude/status offline']);
    expect(packets[0]?.qos).toBe(1);

    // The will was retained: a later subscriber sees it.
    const { client: late } = await open('late');
    const lateLines = collect(late).lines;
    await late.subscribeAsync('devices/#', { qos: 0 });
    await until(() => lateLines.length === 1);
    expect(lateLines).toEqual(['devices/rude/status offline']);
  });
});

describe('authentication', () => {
  it('answers a wrong password with CONNACK 4 and a user without MQTT permission with CONNACK 5', async () => {
    const hash = await hashPassword('s3cret');
    await restart(parseUsersFile(JSON.stringify({ users: [{ username: 'probe', password: hash }, { username: 'web', password: hash, mqtt: false }] }), 'test'));
    const good = await open('probe-1', { username: 'probe', password: 's3cret' });
    expect(good.connack.returnCode).toBe(0);
    await expect(open('probe-2', { username: 'probe', password: 'wrong' })).rejects.toMatchObject({ code: 4 });
    await expect(open('probe-3', { username: 'web', password: 's3cret' })).rejects.toMatchObject({ code: 5 });
    await expect(open('probe-4')).rejects.toMatchObject({ code: 5 });
  });

  it('checks the password a CONNECT carried even when its check waits behind others (the read that brought it was only lent)', async () => {
    const users = ['u0', 'u1', 'u2', 'u3', 'u4', 'u5'];
    const entries = await Promise.all(users.map(async (username) => ({ username, password: await hashPassword(`password of ${username}`) })));
    await restart(parseUsersFile(JSON.stringify({ users: entries }), 'test'));
    // At most two password hashes run at once: the later CONNECTs wait while the other connections are read.
    const connacks = await Promise.all(users.map((username) => open(`lent-${username}`, { username, password: `password of ${username}` })));
    expect(connacks.map(({ connack }) => connack.returnCode)).toEqual([0, 0, 0, 0, 0, 0]);
  });
});

// ───────────────────── raw socket: what MQTT.js will not send ─────────────────────

class RawClient {
  private readonly received: Packet[] = [];
  readonly closed: Promise<void>;

  constructor(readonly socket: Socket) {
    const parser = createParser({ protocolVersion: 4 });
    parser.on('packet', (packet: Packet) => this.received.push(packet));
    socket.on('data', (chunk: Buffer) => parser.parse(chunk));
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
  }

  static async open(port: number): Promise<RawClient> {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const opened = netConnect(port, '127.0.0.1', () => resolve(opened));
      opened.once('error', reject);
    });
    sockets.push(socket);
    return new RawClient(socket);
  }

  send(packet: Packet): void {
    this.socket.write(generate(packet, { protocolVersion: 4 }));
  }

  async next(): Promise<Packet> {
    await until(() => this.received.length > 0);
    return this.received.shift() as Packet;
  }

  pending(): number {
    return this.received.length;
  }
}

describe('raw socket', () => {
  it('answers a QoS 2 resend with DUP before PUBREL with PUBREC again, and delivers once [MQTT-4.3.3-2]', async () => {
    const { client: billing } = await open('billing', { clean: false });
    const { lines } = collect(billing);
    await billing.subscribeAsync('meter/+/kwh', { qos: 2 });

    const meter = await RawClient.open(server.port);
    meter.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clientId: 'meter-42', clean: false, keepalive: 30 });
    expect(await meter.next()).toMatchObject({ cmd: 'connack', returnCode: 0 });
    const publish = { cmd: 'publish', topic: 'meter/42/kwh', payload: Buffer.from('1532.7'), qos: 2, messageId: 1, retain: false } as const;
    meter.send({ ...publish, dup: false });
    expect(await meter.next()).toMatchObject({ cmd: 'pubrec', messageId: 1 });
    meter.send({ ...publish, dup: true });
    expect(await meter.next()).toMatchObject({ cmd: 'pubrec', messageId: 1 });
    meter.send({ cmd: 'pubrel', messageId: 1 });
    expect(await meter.next()).toMatchObject({ cmd: 'pubcomp', messageId: 1 });
    await until(() => lines.length >= 1);
    await settle();
    expect(lines).toEqual(['meter/42/kwh 1532.7']);

    // After PUBREL the id is free again: the same id now carries a new message.
    meter.send({ ...publish, payload: Buffer.from('1533.0'), dup: false });
    expect(await meter.next()).toMatchObject({ cmd: 'pubrec', messageId: 1 });
    meter.send({ cmd: 'pubrel', messageId: 1 });
    expect(await meter.next()).toMatchObject({ cmd: 'pubcomp', messageId: 1 });
    await until(() => lines.length >= 2);
    expect(lines).toEqual(['meter/42/kwh 1532.7', 'meter/42/kwh 1533.0']);
  });

  it('closes the connection without PUBACK when the log fails', async () => {
    // A persistent subscriber makes the QoS 1 publish durable work, so its PUBACK waits for the log.
    const { client: keeper } = await open('keeper', { clean: false });
    await keeper.subscribeAsync('audit/#', { qos: 1 });
    const raw = await RawClient.open(server.port);
    raw.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clientId: 'doomed', clean: true, keepalive: 30 });
    expect(await raw.next()).toMatchObject({ cmd: 'connack', returnCode: 0 });
    fileSystem.failSync = true;
    raw.send({ cmd: 'publish', topic: 'audit/x', payload: Buffer.from('x'), qos: 1, messageId: 9, retain: false, dup: false });
    await within(2_000, raw.closed);
    expect(raw.pending()).toBe(0);
  });

  it('closes on a wildcard topic in PUBLISH and keeps serving MQTT.js clients [MQTT-3.3.2-2]', async () => {
    const raw = await RawClient.open(server.port);
    raw.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clientId: 'wild', clean: true, keepalive: 30 });
    expect(await raw.next()).toMatchObject({ cmd: 'connack', returnCode: 0 });
    raw.send({ cmd: 'publish', topic: 'a/#', payload: Buffer.from('x'), qos: 0, retain: false, dup: false });
    await within(2_000, raw.closed);
    const { client } = await open('still-fine');
    await client.publishAsync('a/b', 'ok', { qos: 1 });
  });
});

describe('reading the socket', () => {
  it('reads a TCP connection directly (socket-reads.ts) and still takes a PUBLISH larger than one read intact', async () => {
    const { client: subscriber } = await open('direct-sub');
    await subscriber.subscribeAsync('big/one', { qos: 1 });
    const { client: publisher } = await open('direct-pub');
    expect(server.list().map((connection) => connection.readMode)).toEqual(['direct', 'direct']);
    const payload = Buffer.alloc(300_000);
    for (let i = 0; i < payload.length; i++) payload[i] = (i * 7) % 251;
    const received = new Promise<Buffer>((resolve) => subscriber.once('message', (_topic, message) => resolve(message)));
    await publisher.publishAsync('big/one', payload, { qos: 1 });
    expect((await within(5_000, received)).equals(payload)).toBe(true);
  });

  // A direct read is only lent (socket-reads.ts): the next read of any connection overwrites it. What the framer holds
  // of it (a first byte alone, or the start of a body) is copied before then.
  it.each([['its first byte', 1], ['part of its body', 12]] as const)('takes a PUBLISH split after %s intact when another connection is read between the parts', async (_, splitAt) => {
    const { client: subscriber } = await open('lent-sub');
    const { lines } = collect(subscriber);
    await subscriber.subscribeAsync('lent/one', { qos: 0 });
    const publisher = netConnect(server.port, '127.0.0.1');
    const other = netConnect(server.port, '127.0.0.1');
    sockets.push(publisher, other);
    publisher.write(generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId: 'lent-pub', keepalive: 0 }));
    other.write(generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId: 'lent-other', keepalive: 0 }));
    let otherBytes = 0;
    let publisherBytes = 0;
    other.on('data', (chunk: Buffer) => { otherBytes += chunk.length; });
    publisher.on('data', (chunk: Buffer) => { publisherBytes += chunk.length; });
    await until(() => publisherBytes === 4 && otherBytes === 4);
    const publish = generate({ cmd: 'publish', topic: 'lent/one', payload: Buffer.from('the whole payload, every byte of it'), qos: 0, retain: false, dup: false });
    const accepted = server.list().find((connection) => connection.socket.remotePort === publisher.localPort)!;
    const readBefore = accepted.socket.bytesRead;
    publisher.write(publish.subarray(0, splitAt));
    await until(() => accepted.socket.bytesRead === readBefore + splitAt);
    // PINGREQ: its PINGRESP says the broker read it, into the same read buffer.
    other.write(Buffer.from([0xc0, 0x00]));
    await until(() => otherBytes === 6);
    publisher.write(publish.subarray(splitAt));
    await until(() => lines.length === 1);
    expect(lines).toEqual(['lent/one the whole payload, every byte of it']);
  });

  // Reads of the same length are lent the same view, and a payload at the same offset in it the same payload view
  // (payload-views.ts): PUBLISHes of one length whose topics, and so payload offsets, differ must each keep their own.
  it('takes each payload whole from reads of one length whose payloads start at different offsets', async () => {
    const { client: subscriber } = await open('views-sub');
    const { lines } = collect(subscriber);
    await subscriber.subscribeAsync('views/#', { qos: 1 });
    const { client: publisher } = await open('views-pub');
    const sent: string[] = [];
    for (let i = 0; i < 12; i++) {
      // 'views/a' + 12 bytes and 'views/ab' + 11 bytes: the same packet length, the payload one byte apart.
      const [topic, payload] = i % 3 === 0 ? ['views/ab', `${i % 10}bcdefghijk`] : ['views/a', `${i % 10}bcdefghijkl`];
      sent.push(`${topic} ${payload}`);
      await publisher.publishAsync(topic, payload, { qos: 1 });
    }
    await until(() => lines.length === sent.length);
    expect(lines).toEqual(sent);
  });

  it('keeps its own copy of a payload it keeps from a lent read (a retained message)', async () => {
    const { client: publisher } = await open('kept-pub');
    await publisher.publishAsync('kept/retained', 'the retained value, as it was sent', { qos: 1, retain: true });
    // Reads between: each overwrites the shared read buffer the PUBLISH came in.
    for (let i = 0; i < 20; i++) await publisher.publishAsync('elsewhere', Buffer.alloc(2_000, 0x7e), { qos: 1 });
    const { client: subscriber } = await open('kept-sub');
    const { lines } = collect(subscriber);
    await subscriber.subscribeAsync('kept/#', { qos: 1 });
    await until(() => lines.length === 1);
    expect(lines).toEqual(['kept/retained the retained value, as it was sent']);
  });
});

describe('writing the socket', () => {
  it('writes a TCP connection\'s PUBACKs through its handle (socket-writes.ts), never through its Writable', async () => {
    const { client: publisher } = await open('direct-writes');
    const [connection] = server.list();
    expect(connection!.socketWriter.mode).toBe('direct');
    let streamWrites = 0;
    const socket = connection!.socket;
    const write = socket.write.bind(socket);
    socket.write = ((...args: Parameters<typeof socket.write>) => { streamWrites++; return write(...args); }) as typeof socket.write;
    const before = connection!.socketWriter.directWrites;
    for (let i = 0; i < 200; i++) await publisher.publishAsync('direct/writes', 'x', { qos: 1 });
    // Were the fast path silently lost (another Node, a changed internal), this is where it shows.
    expect(connection!.socketWriter.directWrites - before).toBe(200);
    expect(streamWrites).toBe(0);
  });
});
