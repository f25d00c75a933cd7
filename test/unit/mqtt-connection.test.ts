/**
 * The MQTT connection layer against a fake core, over real loopback sockets
 * with a raw client (mqtt-packet's generate and parser): CONNECT variants and
 * return codes, protocol violations, limits, keep-alive, wills, takeover, and
 * ack ordering against Durables the test resolves by hand.
 */
import { connect as netConnect, type Socket } from 'node:net';
import { generate, parser as createParser, type Packet } from 'mqtt-packet';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type {
  Durable,
  MqttClientLink,
  MqttCore,
  MqttIncomingPublish,
  MqttOutgoingPublish,
  MqttSessionHandle,
  Qos,
} from '../../src/core/api.js';
import { topicMatchesFilter } from '../../src/core/topic-filter.js';
import { silentLogger } from '../../src/logger.js';
import { hashPassword, parseUsersFile } from '../../src/auth/users.js';
import { startMqttServer, type MqttServer, type MqttServerOptions } from '../../src/protocols/mqtt/server.js';
import { until } from '../support/kit.js';

// ───────────────────────────── a fake core ─────────────────────────────

/** A Durable the test settles by hand. */
function manualDurable(): { durable: Promise<void>; resolve: () => void; reject: (error: Error) => void } {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const durable = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { durable, resolve, reject };
}

interface FakeSession extends MqttSessionHandle {
  link: MqttClientLink;
  subscriptions: Map<string, Qos>;
  detached: boolean;
  started: boolean;
  calls: string[];
}

/**
 * Routes publishes to live subscribers (QoS 0 only, enough for these tests),
 * records every call, and lets a test hold any Durable back via `holdDurables`.
 */
class FakeCore implements MqttCore {
  readonly sessions = new Map<string, FakeSession>();
  readonly persistent = new Set<string>();
  readonly wills: Array<{ clientId: string; publish: Omit<MqttIncomingPublish, 'packetId'> }> = [];
  readonly published: MqttIncomingPublish[] = [];
  /** When set, every command returns a manual Durable pushed here. */
  holdDurables = false;
  readonly held: Array<ReturnType<typeof manualDurable>> = [];

  private durable(): Durable {
    if (!this.holdDurables) return undefined;
    const manual = manualDurable();
    this.held.push(manual);
    return manual.durable;
  }

  connect(clientId: string, cleanSession: boolean, link: MqttClientLink): { session: MqttSessionHandle; sessionPresent: boolean; durable: Durable } {
    const previous = this.sessions.get(clientId);
    if (previous !== undefined && !previous.detached) previous.link.takenOver();
    const sessionPresent = !cleanSession && this.persistent.has(clientId);
    if (cleanSession) this.persistent.delete(clientId);
    else this.persistent.add(clientId);
    const core = this;
    const session: FakeSession = {
      clientId,
      persistent: !cleanSession,
      link,
      subscriptions: new Map(),
      detached: false,
      started: false,
      calls: [],
      start() {
        session.started = true;
      },
      subscribe(requests) {
        session.calls.push(`subscribe ${requests.map((request) => request.filter).join(',')}`);
        for (const request of requests) session.subscriptions.set(request.filter, request.qos);
        return { granted: requests.map((request) => request.qos), durable: core.durable(), retainedFilters: requests.map((request) => request.filter) };
      },
      awaitsRelease() {
        return true;
      },
      sendRetained(filters) {
        session.calls.push(`sendRetained ${filters.join(',')}`);
      },
      unsubscribe(filters) {
        session.calls.push(`unsubscribe ${filters.join(',')}`);
        for (const filter of filters) session.subscriptions.delete(filter);
        return core.durable();
      },
      subscribed(filter) {
        return session.subscriptions.has(filter);
      },
      publish(publish) {
        core.published.push(publish);
        core.route(publish);
        return { durable: core.durable(), duplicate: false };
      },
      pubrel(packetId) {
        session.calls.push(`pubrel ${packetId}`);
        return core.durable();
      },
      puback(packetId) {
        session.calls.push(`puback ${packetId}`);
      },
      pubrec(packetId) {
        session.calls.push(`pubrec ${packetId}`);
        link.sendPubrel(packetId);
      },
      pubcomp(packetId) {
        session.calls.push(`pubcomp ${packetId}`);
      },
      detach(_sessionExpiryInterval, will) {
        session.detached = true;
        if (will !== undefined) {
          core.wills.push({ clientId, publish: will });
          core.route(will);
        }
        return undefined;
      },
    };
    this.sessions.set(clientId, session);
    return { session, sessionPresent, durable: this.durable() };
  }

  publishSystem(): void {}

  route(publish: Omit<MqttIncomingPublish, 'packetId'>): void {
    for (const session of this.sessions.values()) {
      if (session.detached) continue;
      for (const filter of session.subscriptions.keys()) {
        if (topicMatchesFilter(publish.topic, filter)) {
          const outgoing: MqttOutgoingPublish = { topic: publish.topic, payload: publish.payload, qos: 0, retain: false, dup: false };
          session.link.sendPublish(outgoing);
          break;
        }
      }
    }
  }
}

// ───────────────────────────── a raw client ─────────────────────────────

class RawClient {
  private readonly received: Packet[] = [];
  private waiter: (() => void) | undefined;
  private closedFlag = false;
  readonly closed: Promise<void>;

  private constructor(readonly socket: Socket) {
    const parser = createParser({ protocolVersion: 4 });
    parser.on('packet', (packet: Packet) => {
      this.received.push(packet);
      this.waiter?.();
    });
    socket.on('data', (chunk: Buffer) => parser.parse(chunk));
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) =>
      socket.on('close', () => {
        this.closedFlag = true;
        this.waiter?.();
        resolve();
      }),
    );
  }

  static open(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = netConnect(port, '127.0.0.1', () => resolve(new RawClient(socket)));
      socket.once('error', reject);
    });
  }

  send(packet: Packet): void {
    this.socket.write(generate(packet, { protocolVersion: 4 }));
  }

  sendBytes(bytes: Buffer | number[]): void {
    this.socket.write(Buffer.from(bytes));
  }

  get isClosed(): boolean {
    return this.closedFlag;
  }

  /** The next packet from the server; rejects if the socket closes first or nothing comes in time. */
  async next(timeoutMs = 2_000): Promise<Packet> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const packet = this.received.shift();
      if (packet !== undefined) return packet;
      if (this.closedFlag) throw new Error('socket closed before the next packet');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('no packet in time');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiter = undefined;
    }
  }

  /** Resolves true when the server closes the socket within the time, false otherwise. */
  async closesWithin(timeoutMs: number): Promise<boolean> {
    const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs));
    return Promise.race([this.closed.then(() => true), timeout]);
  }

  end(): void {
    this.socket.destroy();
  }
}

function connectPacket(fields: Partial<Extract<Packet, { cmd: 'connect' }>> = {}): Packet {
  return { cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, keepalive: 60, clientId: 'client-a', ...fields };
}

/** A CONNECT written by hand, for protocol names and levels mqtt-packet will not generate. */
function rawConnect(protocolName: string, level: number, options: { clientId?: string; flags?: number } = {}): Buffer {
  const name = Buffer.from(protocolName);
  const clientId = Buffer.from(options.clientId ?? 'raw');
  const body = Buffer.concat([
    Buffer.from([0, name.length]),
    name,
    Buffer.from([level, options.flags ?? 0x02, 0, 60, 0, clientId.length]),
    clientId,
  ]);
  return Buffer.concat([Buffer.from([0x10, body.length]), body]);
}

// ───────────────────────────── the tests ─────────────────────────────

let core: FakeCore;
let server: MqttServer;
const clients: RawClient[] = [];

async function start(options: Partial<MqttServerOptions> = {}): Promise<void> {
  await server?.close();
  server = await startMqttServer({ core, host: '127.0.0.1', port: 0, logger: silentLogger(), ...options });
}

async function client(): Promise<RawClient> {
  const opened = await RawClient.open(server.port);
  clients.push(opened);
  return opened;
}

async function connected(fields: Partial<Extract<Packet, { cmd: 'connect' }>> = {}): Promise<RawClient> {
  const raw = await client();
  raw.send(connectPacket(fields));
  const connack = await raw.next();
  expect(connack).toMatchObject({ cmd: 'connack', returnCode: 0 });
  return raw;
}

beforeEach(async () => {
  core = new FakeCore();
  server = await startMqttServer({ core, host: '127.0.0.1', port: 0, logger: silentLogger() });
});

afterEach(async () => {
  for (const raw of clients.splice(0)) raw.end();
  await server.close();
});

describe('CONNECT and CONNACK', () => {
  it('accepts a 3.1.1 CONNECT with return code 0 and session_present from the core', async () => {
    const first = await client();
    first.send(connectPacket({ clientId: 'keeper', clean: false }));
    expect(await first.next()).toMatchObject({ cmd: 'connack', returnCode: 0, sessionPresent: false });
    first.send({ cmd: 'disconnect' });
    await first.closed;

    const second = await client();
    second.send(connectPacket({ clientId: 'keeper', clean: false }));
    expect(await second.next()).toMatchObject({ cmd: 'connack', returnCode: 0, sessionPresent: true });
    expect(core.sessions.get('keeper')?.started).toBe(true);
  });

  it('answers protocol level 3 with CONNACK 1 and closes [MQTT-3.1.2-2]', async () => {
    const raw = await client();
    raw.sendBytes(rawConnect('MQTT', 3));
    expect(await raw.next()).toMatchObject({ cmd: 'connack', returnCode: 1, sessionPresent: false });
    expect(await raw.closesWithin(1_000)).toBe(true);
  });

  it('answers an unknown protocol level (7) with CONNACK 1, though the codec does not know it [MQTT-3.1.2-2]', async () => {
    const raw = await client();
    raw.sendBytes(rawConnect('MQTT', 7));
    expect(await raw.next()).toMatchObject({ cmd: 'connack', returnCode: 1 });
    expect(await raw.closesWithin(1_000)).toBe(true);
  });

  it('answers an MQTT 5 CONNECT without its properties field with CONNACK 0x81 Malformed Packet, then closes', async () => {
    const raw = await client();
    raw.sendBytes(rawConnect('MQTT', 5));
    // Read by a 3.1.1 parser: the v5 reason code sits where the return code was.
    expect(await raw.next()).toMatchObject({ cmd: 'connack', returnCode: 0x81 });
    expect(await raw.closesWithin(1_000)).toBe(true);
  });

  it('closes without CONNACK on a wrong protocol name [MQTT-3.1.2-1]', async () => {
    const raw = await client();
    raw.sendBytes(rawConnect('HTTP', 4));
    expect(await raw.closesWithin(1_000)).toBe(true);
    await expect(raw.next(10)).rejects.toThrow('closed');
  });

  it('generates a client id for an empty one with clean session [MQTT-3.1.3-6]', async () => {
    await connected({ clientId: '', clean: true });
    const ids = [...core.sessions.keys()];
    expect(ids).toHaveLength(1);
    expect(ids[0]).toMatch(/^cairn-.{16}$/);
  });

  it('refuses an empty client id without clean session with CONNACK 2 [MQTT-3.1.3-8]', async () => {
    const raw = await client();
    // mqtt-packet will not generate this CONNECT: flags 0x00 is clean_session=0.
    raw.sendBytes(rawConnect('MQTT', 4, { clientId: '', flags: 0x00 }));
    expect(await raw.next()).toMatchObject({ cmd: 'connack', returnCode: 2 });
    expect(await raw.closesWithin(1_000)).toBe(true);
    expect(core.sessions.size).toBe(0);
  });

  it('closes on a second CONNECT [MQTT-3.1.0-2] and publishes the will', async () => {
    const raw = await connected({ will: { topic: 'status/a', payload: Buffer.from('gone'), qos: 0, retain: false } });
    raw.send(connectPacket());
    expect(await raw.closesWithin(1_000)).toBe(true);
    expect(core.wills.map((will) => will.publish.topic)).toEqual(['status/a']);
  });

  it('closes when the first packet is not CONNECT [MQTT-3.1.0-1]', async () => {
    const raw = await client();
    raw.send({ cmd: 'pingreq' });
    expect(await raw.closesWithin(1_000)).toBe(true);
    expect(core.sessions.size).toBe(0);
  });

  it('sends CONNACK only after the session is durable, and reads nothing before', async () => {
    core.holdDurables = true;
    const raw = await client();
    raw.send(connectPacket());
    raw.send({ cmd: 'pingreq' });
    await expect(raw.next(100)).rejects.toThrow('no packet in time');
    expect(core.held).toHaveLength(1);
    core.held[0]?.resolve();
    expect(await raw.next()).toMatchObject({ cmd: 'connack', returnCode: 0 });
    expect(await raw.next()).toMatchObject({ cmd: 'pingresp' });
  });

  it('closes without CONNACK when the session cannot be recorded (the log failed)', async () => {
    core.holdDurables = true;
    const raw = await client();
    raw.send(connectPacket({ will: { topic: 'status/a', payload: Buffer.from('x'), qos: 0, retain: false } }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    core.held[0]?.reject(new Error('fsync failed'));
    expect(await raw.closesWithin(1_000)).toBe(true);
    await expect(raw.next(10)).rejects.toThrow('closed');
    expect(core.sessions.get('client-a')?.detached).toBe(true);
    // The connection was never accepted, so it has no will to publish.
    expect(core.wills).toEqual([]);
  });
});

describe('authentication', () => {
  it('maps outcomes to CONNACK 4 and 5, and lets a good user in', async () => {
    // One user with MQTT permission and one without, both with the password 'secret'.
    const hash = await hashPassword('secret');
    const users = parseUsersFile(
      JSON.stringify({ users: [{ username: 'alice', password: hash }, { username: 'bob', password: hash, mqtt: false }] }),
      'inline',
    );
    await start({ users });
    const cases: Array<[Partial<Extract<Packet, { cmd: 'connect' }>>, number]> = [
      [{ username: 'alice', password: Buffer.from('secret') }, 0],
      [{ username: 'alice', password: Buffer.from('wrong') }, 4],
      [{ username: 'mallory', password: Buffer.from('secret') }, 4],
      [{ username: 'alice' }, 4],
      [{ username: 'bob', password: Buffer.from('secret') }, 5],
      [{}, 5],
    ];
    for (const [fields, returnCode] of cases) {
      const raw = await client();
      raw.send(connectPacket({ clientId: `auth-${returnCode}`, ...fields }));
      expect(await raw.next(), JSON.stringify(fields)).toMatchObject({ cmd: 'connack', returnCode });
      if (returnCode !== 0) expect(await raw.closesWithin(1_000)).toBe(true);
      raw.end();
    }
  });
});

describe('protocol violations and limits close only the offending connection', () => {
  it('closes on a wildcard in a PUBLISH topic name [MQTT-3.3.2-2], fires the will, and keeps serving others', async () => {
    const other = await connected({ clientId: 'other' });
    other.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'will/#', qos: 0 }] });
    expect(await other.next()).toMatchObject({ cmd: 'suback', granted: [0] });

    const bad = await connected({ clientId: 'bad', will: { topic: 'will/bad', payload: Buffer.from('x'), qos: 0, retain: false } });
    bad.send({ cmd: 'publish', topic: 'a/+/c', payload: Buffer.from('x'), qos: 0, retain: false, dup: false });
    expect(await bad.closesWithin(1_000)).toBe(true);
    expect(core.published).toHaveLength(0);
    expect(await other.next()).toMatchObject({ cmd: 'publish', topic: 'will/bad' });

    other.send({ cmd: 'pingreq' });
    expect(await other.next()).toMatchObject({ cmd: 'pingresp' });
  });

  it('closes on an oversized packet after reading only its fixed header', async () => {
    await start({ limits: { packetBytesMax: 1024 } });
    const raw = await connected();
    // Announce 100 MiB of PUBLISH but send only the fixed header and a few bytes.
    raw.sendBytes([0x30, 0x80, 0x80, 0x80, 0x32, 0, 1, 0x61]);
    expect(await raw.closesWithin(1_000)).toBe(true);
    const small = await connected({ clientId: 'small' });
    small.send({ cmd: 'publish', topic: 'a', payload: Buffer.alloc(900), qos: 0, retain: false, dup: false });
    small.send({ cmd: 'pingreq' });
    expect(await small.next()).toMatchObject({ cmd: 'pingresp' });
    expect(core.published).toHaveLength(1);
  });

  it('closes on garbage bytes before CONNECT and after it, and the server still serves', async () => {
    const before = await client();
    before.sendBytes(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    expect(await before.closesWithin(1_000)).toBe(true);

    const after = await connected({ clientId: 'garbage' });
    after.sendBytes([0x00, 0x00]); // packet type 0 is reserved
    expect(await after.closesWithin(1_000)).toBe(true);

    const reservedFlags = await connected({ clientId: 'flags' });
    reservedFlags.sendBytes([0x82, 0x02, 0x00, 0x01]); // SUBSCRIBE flags must be 0010 [MQTT-3.8.1-1], and no payload
    expect(await reservedFlags.closesWithin(1_000)).toBe(true);

    const fine = await connected({ clientId: 'fine' });
    fine.send({ cmd: 'pingreq' });
    expect(await fine.next()).toMatchObject({ cmd: 'pingresp' });
    expect(server.connections()).toBe(1);
  });

  it('closes a connection that never sends CONNECT', async () => {
    await start({ limits: { connectTimeoutMs: 100 } });
    const silent = await client();
    expect(await silent.closesWithin(1_000)).toBe(true);
  });

  it('refuses connections beyond connectionsMax', async () => {
    await start({ limits: { connectionsMax: 1 } });
    await connected();
    const extra = await client();
    expect(await extra.closesWithin(1_000)).toBe(true);
  });
});

describe('acknowledgements wait for their Durable', () => {
  it('acknowledges in PUBLISH order: a QoS 1 PUBLISH with nothing to wait for waits for an earlier one [MQTT-4.6.0-2]', async () => {
    const raw = await connected();
    core.holdDurables = true;
    raw.send({ cmd: 'publish', topic: 't/1', payload: Buffer.from('one'), qos: 1, messageId: 1, retain: false, dup: false });
    await until(() => core.held.length === 1, 'the first PUBLISH to reach the core');
    core.holdDurables = false;
    raw.send({ cmd: 'publish', topic: 't/2', payload: Buffer.from('two'), qos: 1, messageId: 2, retain: false, dup: false });
    await until(() => core.published.length === 2, 'the second PUBLISH to reach the core');
    await expect(raw.next(100)).rejects.toThrow('no packet in time');
    core.held[0]?.resolve();
    expect(await raw.next()).toMatchObject({ cmd: 'puback', messageId: 1 });
    expect(await raw.next()).toMatchObject({ cmd: 'puback', messageId: 2 });
  });

  it('sends PUBACK, PUBREC, PUBCOMP, SUBACK and UNSUBACK only after each Durable resolves', async () => {
    const raw = await connected();
    core.holdDurables = true;
    raw.send({ cmd: 'publish', topic: 't/1', payload: Buffer.from('one'), qos: 1, messageId: 1, retain: false, dup: false });
    raw.send({ cmd: 'publish', topic: 't/2', payload: Buffer.from('two'), qos: 2, messageId: 2, retain: false, dup: false });
    raw.send({ cmd: 'subscribe', messageId: 3, subscriptions: [{ topic: 'x/#', qos: 1 }, { topic: 'bad/#/x', qos: 1 }] });
    raw.send({ cmd: 'unsubscribe', messageId: 4, unsubscriptions: ['x/#'] });
    await expect(raw.next(100)).rejects.toThrow('no packet in time');
    expect(core.held).toHaveLength(4);
    // Resolved out of order: each ack follows its own Durable.
    core.held[1]?.resolve();
    expect(await raw.next()).toMatchObject({ cmd: 'pubrec', messageId: 2 });
    core.held[0]?.resolve();
    expect(await raw.next()).toMatchObject({ cmd: 'puback', messageId: 1 });
    core.held[2]?.resolve();
    expect(await raw.next()).toMatchObject({ cmd: 'suback', messageId: 3, granted: [1, 0x80] });
    core.held[3]?.resolve();
    expect(await raw.next()).toMatchObject({ cmd: 'unsuback', messageId: 4 });
    const session = core.sessions.get('client-a');
    // UNSUBSCRIBE reached the core at once; retained values only after SUBACK.
    expect(session?.calls).toEqual(['subscribe x/#', 'unsubscribe x/#', 'sendRetained x/#']);

    raw.send({ cmd: 'pubrel', messageId: 2 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(core.held).toHaveLength(5);
    core.held[4]?.resolve();
    expect(await raw.next()).toMatchObject({ cmd: 'pubcomp', messageId: 2 });
  });

  it('closes without PUBACK when the Durable rejects (the log failed)', async () => {
    const raw = await connected();
    core.holdDurables = true;
    raw.send({ cmd: 'publish', topic: 't', payload: Buffer.from('x'), qos: 1, messageId: 7, retain: false, dup: false });
    await new Promise((resolve) => setTimeout(resolve, 50));
    core.held[0]?.reject(new Error('EIO'));
    expect(await raw.closesWithin(1_000)).toBe(true);
    await expect(raw.next(10)).rejects.toThrow('closed');
  });

  it('stops reading at inboundAcksPendingMax unanswered acks and resumes when half are sent', async () => {
    await start({ limits: { inboundAcksPendingMax: 4 } });
    const raw = await connected();
    core.holdDurables = true;
    for (let id = 1; id <= 10; id++) {
      raw.send({ cmd: 'publish', topic: 't', payload: Buffer.from([id]), qos: 1, messageId: id, retain: false, dup: false });
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(core.published).toHaveLength(4);
    core.held[0]?.resolve();
    core.held[1]?.resolve();
    expect(await raw.next()).toMatchObject({ cmd: 'puback', messageId: 1 });
    expect(await raw.next()).toMatchObject({ cmd: 'puback', messageId: 2 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(core.published).toHaveLength(6);
    core.holdDurables = false;
    for (const held of core.held) held.resolve();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(core.published).toHaveLength(10);
  });

  it('passes PUBACK, PUBREC and PUBCOMP of outbound flows to the session, and writes its PUBREL', async () => {
    const raw = await connected();
    raw.send({ cmd: 'puback', messageId: 11 });
    raw.send({ cmd: 'pubrec', messageId: 12 });
    expect(await raw.next()).toMatchObject({ cmd: 'pubrel', messageId: 12 });
    raw.send({ cmd: 'pubcomp', messageId: 12 });
    raw.send({ cmd: 'pingreq' });
    expect(await raw.next()).toMatchObject({ cmd: 'pingresp' });
    expect(core.sessions.get('client-a')?.calls).toEqual(['puback 11', 'pubrec 12', 'pubcomp 12']);
  });
});

describe('keep-alive, wills and takeover', () => {
  it('closes after 1.5 × keep-alive without packets and publishes the will [MQTT-3.1.2-24]', async () => {
    const watcher = await connected({ clientId: 'watcher', keepalive: 0 });
    watcher.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'status/+', qos: 0 }] });
    await watcher.next();
    const sleepy = await connected({ clientId: 'sleepy', keepalive: 1, will: { topic: 'status/sleepy', payload: Buffer.from('offline'), qos: 1, retain: true } });
    const started = Date.now();
    expect(await sleepy.closesWithin(3_000)).toBe(true);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(1_400);
    expect(core.wills).toEqual([{ clientId: 'sleepy', publish: { topic: 'status/sleepy', payload: Buffer.from('offline'), qos: 1, retain: true } }]);
    expect(await watcher.next()).toMatchObject({ cmd: 'publish', topic: 'status/sleepy' });
    expect(core.sessions.get('sleepy')?.detached).toBe(true);
  });

  it('keeps a connection that pings within the keep-alive', async () => {
    const pinger = await connected({ keepalive: 1 });
    for (let index = 0; index < 4; index++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      pinger.send({ cmd: 'pingreq' });
      expect(await pinger.next()).toMatchObject({ cmd: 'pingresp' });
    }
    expect(pinger.isClosed).toBe(false);
  });

  it('moves no timer per packet: a read only marks the connection active for the next keep-alive check', async () => {
    const pinger = await connected({ keepalive: 60 });
    const refresh = vi.spyOn(Object.getPrototypeOf(setTimeout(() => undefined, 0)) as NodeJS.Timeout, 'refresh');
    try {
      for (let index = 0; index < 50; index++) {
        pinger.send({ cmd: 'pingreq' });
        expect(await pinger.next()).toMatchObject({ cmd: 'pingresp' });
      }
      expect(refresh).not.toHaveBeenCalled();
    } finally {
      refresh.mockRestore();
    }
  });

  it('publishes the will when the socket drops, not after DISCONNECT [MQTT-3.14.4-3]', async () => {
    const will = { topic: 'status/x', payload: Buffer.from('bye'), qos: 0 as const, retain: false };
    const polite = await connected({ clientId: 'polite', will });
    polite.send({ cmd: 'disconnect' });
    expect(await polite.closesWithin(1_000)).toBe(true);
    const rude = await connected({ clientId: 'rude', will });
    rude.end();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(core.wills.map((entry) => entry.clientId)).toEqual(['rude']);
    expect(core.sessions.get('polite')?.detached).toBe(true);
    expect(core.sessions.get('rude')?.detached).toBe(true);
  });

  it('closes the old connection on takeover without its will, and does not detach the new session [MQTT-3.1.4-2]', async () => {
    const old = await connected({ clientId: 'same', will: { topic: 'status/same', payload: Buffer.from('x'), qos: 0, retain: false } });
    const oldSession = core.sessions.get('same');
    const fresh = await connected({ clientId: 'same' });
    expect(await old.closesWithin(1_000)).toBe(true);
    expect(core.wills).toHaveLength(0);
    expect(oldSession?.detached).toBe(false);
    expect(core.sessions.get('same')?.detached).toBe(false);
    fresh.send({ cmd: 'pingreq' });
    expect(await fresh.next()).toMatchObject({ cmd: 'pingresp' });
  });
});

describe('outbound flow control', () => {
  it('drops QoS 0 deliveries to a congested socket instead of buffering them', async () => {
    await start({ limits: { writeBufferHighWaterBytes: 64 * 1024 } });
    const slow = await connected({ clientId: 'slow' });
    slow.socket.pause(); // never reads: the kernel buffers fill, then Node's
    const session = core.sessions.get('slow');
    const payload = new Uint8Array(16 * 1024);
    let accepted = 0;
    let refused = 0;
    for (let index = 0; index < 2_000; index++) {
      const sent = session?.link.sendPublish({ topic: 'bulk', payload, qos: 0, retain: false, dup: false });
      if (sent === true) accepted += 1;
      else refused += 1;
      if (index % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    expect(refused).toBeGreaterThan(0);
    // What was written fits in the kernel's socket buffers plus the high-water
    // mark, far below the 32 MiB offered.
    expect(accepted * payload.length).toBeLessThan(16 * 1024 * 1024);
  });
});
