/**
 * A broker driven by commands on a real SegmentedLog, for the inspector's
 * tests and benchmark: MQTT sessions with fake links that remember what they
 * were sent, AMQP consumers that hold what they were given. The records it
 * leaves are the ones the real broker writes.
 *
 * The clock is injected (one millisecond per call from `startTime`) so record
 * timestamps are deterministic and strictly increasing.
 */
import { Broker } from '../../src/core/broker.js';
import type { AmqpConsumer, MqttClientLink, MqttOutgoingPublish, MqttSessionHandle, MqttWill, QueueDelivery } from '../../src/core/api.js';
import { SegmentedLog, type LogOptions } from '../../src/log/index.js';

export class RecordingLink implements MqttClientLink {
  readonly received: MqttOutgoingPublish[] = [];
  readonly pubrels: number[] = [];
  sendPublish(publish: MqttOutgoingPublish): boolean { this.received.push(publish); return true; }
  sendPubrel(packetId: number): void { this.pubrels.push(packetId); }
  /** `will`: what the connection hands the core when a newer one takes its session over. */
  constructor(private readonly will?: MqttWill) {}
  takenOver(): MqttWill | undefined { return this.will; }
  readFailed(error: Error): void { throw error; }
}

export class HoldingConsumer implements AmqpConsumer {
  readonly held: QueueDelivery[] = [];
  constructor(readonly tag: string, readonly noAck: boolean, private readonly prefetch: number) {}
  canAccept(): boolean { return this.prefetch === 0 || this.held.length < this.prefetch; }
  deliver(delivery: QueueDelivery): void { if (!this.noAck) this.held.push(delivery); }
  cancelledByBroker(): void { this.held.length = 0; }
  readFailed(error: Error): void { throw error; }
}

export interface WorkloadOptions {
  readonly startTime?: number;
  readonly log?: Omit<LogOptions, 'dir'>;
  readonly snapshotEveryRecords?: number;
  /** The recent-message cache (0: every delivery reads the log). */
  readonly messageCacheBytes?: number;
}

export class WorkloadDriver {
  readonly sessions = new Map<string, { handle: MqttSessionHandle; link: RecordingLink }>();
  private time: number;

  private constructor(readonly log: SegmentedLog, readonly broker: Broker, startTime: number) {
    this.time = startTime;
  }

  static async open(dir: string, options: WorkloadOptions = {}): Promise<WorkloadDriver> {
    const log = await SegmentedLog.open({ dir, ...options.log });
    const startTime = options.startTime ?? Date.UTC(2024, 4, 1, 12, 0, 0);
    let driver: WorkloadDriver | undefined;
    const broker = Broker.open({
      log,
      ingestRoutes: [{ filter: 'sensors/#', collection: 'readings' }],
      limits: {
        snapshotEveryRecords: options.snapshotEveryRecords ?? 0, sessionQueueMessagesMax: 8, queueReadyMessagesMax: 8,
        ...(options.messageCacheBytes === undefined ? {} : { messageCacheBytes: options.messageCacheBytes }),
      },
      clock: () => (driver === undefined ? startTime : driver.time++),
    });
    driver = new WorkloadDriver(log, broker, startTime);
    return driver;
  }

  /** The timestamp the next record will carry. */
  get now(): number { return this.time; }

  async connect(clientId: string, clean = false): Promise<RecordingLink> {
    const link = new RecordingLink();
    const { session, durable } = this.broker.mqtt.connect(clientId, clean, link);
    await durable;
    session.start();
    this.sessions.set(clientId, { handle: session, link });
    return link;
  }

  async subscribe(clientId: string, filter: string, qos: 0 | 1 | 2): Promise<void> {
    const handle = this.handle(clientId);
    await handle.subscribe([{ filter, qos }]).durable;
    handle.sendRetained([filter]);
    await this.broker.flush();
  }

  async publish(clientId: string, topic: string, payload: string | Uint8Array, qos: 0 | 1 | 2, retain = false, packetId = 1): Promise<void> {
    const bytes = typeof payload === 'string' ? new TextEncoder().encode(payload) : payload;
    await this.handle(clientId).publish({ topic, payload: bytes, qos, retain, ...(qos > 0 ? { packetId } : {}) }).durable;
    await this.broker.flush();
  }

  /** PUBACKs every QoS 1 publish the client was sent that carries a packet id. */
  async pubackAll(clientId: string): Promise<void> {
    const session = this.sessions.get(clientId);
    if (session === undefined) throw new Error(`no session ${clientId}`);
    for (const publish of session.link.received.splice(0)) if (publish.packetId !== undefined && publish.qos === 1) session.handle.puback(publish.packetId);
    await this.broker.flush();
  }

  detach(clientId: string): void {
    this.sessions.get(clientId)?.handle.detach();
    this.sessions.delete(clientId);
  }

  async declareQueue(name: string, durable = true): Promise<void> {
    await this.broker.amqp.declareQueue(name, { passive: false, durable, exclusive: false, autoDelete: false, arguments: {}, owner: 'o' }).durable;
    await this.broker.flush();
  }

  async deleteQueue(name: string): Promise<void> {
    await this.broker.amqp.deleteQueue(name, { ifUnused: false, ifEmpty: false, owner: 'o' }).durable;
    await this.broker.flush();
  }

  async purgeQueue(name: string): Promise<void> {
    await this.broker.amqp.purgeQueue(name, 'o').durable;
    await this.broker.flush();
  }

  async declareExchange(name: string, type: 'direct' | 'fanout' | 'topic'): Promise<void> {
    await this.broker.amqp.declareExchange(name, type, { passive: false, durable: true, autoDelete: false, internal: false, arguments: {} });
    await this.broker.flush();
  }

  async bind(queue: string, exchange: string, key: string): Promise<void> {
    await this.broker.amqp.bindQueue(queue, exchange, key, 'o');
    await this.broker.flush();
  }

  async amqpPublish(exchange: string, routingKey: string, body: string, from = 'amqp-conn-1'): Promise<void> {
    await this.broker.amqp.publish({ exchange, routingKey, body: new TextEncoder().encode(body), properties: new Uint8Array([0x10, 0, 2]) }, { persistent: true, from }).durable;
    await this.broker.flush();
  }

  /** basic.get then ack or reject (without requeue). */
  async getAndSettle(queue: string, outcome: 'ack' | 'reject' | 'requeue'): Promise<QueueDelivery | undefined> {
    const { delivery } = this.broker.amqp.get(queue, { noAck: false, owner: 'o' });
    if (delivery !== undefined) this.broker.amqp.settle(delivery, outcome);
    await this.broker.flush();
    return delivery;
  }

  async snapshot(): Promise<void> {
    await this.broker.snapshot();
    await this.broker.flush();
  }

  async close(): Promise<void> {
    await this.broker.flush();
    await this.log.close();
  }

  private handle(clientId: string): MqttSessionHandle {
    const session = this.sessions.get(clientId);
    if (session === undefined) throw new Error(`no session ${clientId}: connect first`);
    return session.handle;
  }
}
