/**
 * A broker in the test's own process on a real data directory, with a manual
 * clock (its time and timers move only when the test says so) and an MQTT
 * listener on a free port: for MQTT 5 tests in which time (message and
 * session expiry, will delays) is a fact the test sets.
 *
 * `useInProcessBroker(prefix)` registers the life cycle with vitest: a fresh
 * data directory and broker before each test; clients dropped, the broker
 * stopped once everything is durable and the directory removed after it.
 * `restart()` stops and starts the broker on the same directory (time may move
 * while it is down); timers the stopped broker set never fire.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import type { IConnackPacket, IPublishPacket } from 'mqtt-packet';
import { afterEach, beforeEach } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { SegmentedLog } from '../../src/log/index.js';
import { silentLogger } from '../../src/logger.js';
import { startMqttServer, type MqttServer } from '../../src/protocols/mqtt/server.js';
import { ManualClock } from './manual-clock.js';
import { connectMqtt5 } from './mqtt5-client.js';

/** The time every test starts at (2027-01-15T08:00:00Z). */
export const testStartTime = 1_800_000_000_000;

interface Running {
  readonly log: SegmentedLog;
  readonly broker: Broker;
  readonly server: MqttServer;
}

export class InProcessBroker {
  clock = new ManualClock(testStartTime);
  private running: Running | undefined;
  private dataDir: string | undefined;
  private readonly clients: MqttClient[] = [];

  get log(): SegmentedLog { return this.current.log; }
  get broker(): Broker { return this.current.broker; }
  get server(): MqttServer { return this.current.server; }
  get dataDirectory(): string {
    if (this.dataDir === undefined) throw new Error('start() first');
    return this.dataDir;
  }

  private get current(): Running {
    if (this.running === undefined) throw new Error('the in-process broker is not running');
    return this.running;
  }

  async start(prefix: string): Promise<void> {
    this.clock = new ManualClock(testStartTime);
    this.dataDir = await mkdtemp(join(tmpdir(), `cairn-${prefix}-`));
    await this.boot();
  }

  async stop(): Promise<void> {
    await this.shutDown();
    if (this.dataDir !== undefined) await rm(this.dataDir, { recursive: true, force: true });
    this.dataDir = undefined;
  }

  /** Stop, let `downtimeMs` pass, start again on the same data directory. */
  async restart(downtimeMs = 0): Promise<void> {
    await this.shutDown();
    this.clock.advance(downtimeMs);
    await this.boot();
  }

  /**
   * An MQTT.js client (MQTT 5 unless `options` say otherwise), closed after the test; resolves with its
   * CONNACK. `received` collects its PUBLISHes from the first packet on (a session's queue follows CONNACK).
   */
  async open(clientId: string, options: IClientOptions = {}, received?: IPublishPacket[]): Promise<{ client: MqttClient; connack: IConnackPacket }> {
    const opened = await connectMqtt5(this.server.port, clientId, options, received);
    this.clients.push(opened.client);
    return opened;
  }

  /** An MQTT.js client that is not awaited: for a test that listens before the CONNACK arrives. */
  connect(clientId: string, options: IClientOptions = {}): MqttClient {
    const client = mqtt.connect(`mqtt://127.0.0.1:${this.server.port}`, { clientId, protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 5_000, ...options });
    this.clients.push(client);
    return client;
  }

  private async boot(): Promise<void> {
    if (this.dataDir === undefined) throw new Error('start() first');
    const log = await SegmentedLog.open({ dir: this.dataDir, logger: silentLogger() });
    const broker = Broker.open({ log, logger: silentLogger(), clock: this.clock.now, timers: this.clock });
    broker.mqtt.startSessionExpiry();
    const server = await startMqttServer({ core: broker.mqtt, host: '127.0.0.1', port: 0, logger: silentLogger() });
    this.running = { log, broker, server };
  }

  /** Drops the clients, closes the listener, and closes the log once everything is durable. */
  private async shutDown(): Promise<void> {
    const running = this.running;
    this.running = undefined;
    for (const client of this.clients.splice(0)) client.end(true);
    if (running === undefined) return;
    await running.server.close();
    await running.broker.flush();
    await running.log.close().catch(() => undefined);
    // Set by the broker that stopped (its connections closing too): they must not run on its closed log.
    this.clock.dropTimers();
  }
}

/** One in-process broker per test of the calling file (see the file comment). */
export function useInProcessBroker(prefix: string): InProcessBroker {
  const broker = new InProcessBroker();
  beforeEach(() => broker.start(prefix));
  afterEach(() => broker.stop());
  return broker;
}
