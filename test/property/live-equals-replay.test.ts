/**
 * The central invariant: for any sequence of broker commands, the live state
 * equals the state rebuilt by replaying the log — after every command, and
 * also when starting from a snapshot taken at a random point plus the tail.
 *
 * Commands go through the real core API (MQTT sessions with fake links that
 * acknowledge what they choose to, AMQP queues with fake consumers), so the
 * records under test are the ones the broker really writes. The log keeps
 * bodies MessagePack-encoded, as the segmented log does, so replay sees what
 * a restart would see.
 */
import { decode, encode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Broker, type BrokerLog } from '../../src/core/broker.js';
import type { AmqpConsumer, MqttClientLink, MqttOutgoingPublish, MqttSessionHandle, QueueDelivery } from '../../src/core/api.js';
import type { CoreAppendRecord } from '../../src/core/record-log.js';
import { apply } from '../../src/projections/apply.js';
import type { BrokerRecord } from '../../src/projections/records.js';
import { decodeState, encodeState, type EncodedState } from '../../src/projections/snapshot-codec.js';
import { initialState } from '../../src/projections/state.js';

class EncodingMemoryLog implements BrokerLog {
  readonly encoded: Array<{ lsn: number; kind: number; timestamp: number; body: Uint8Array }> = [];
  failed: Error | undefined = undefined;
  snapshotSaved: { lsn: number; data: Uint8Array } | undefined;
  get nextLsn(): number { return this.encoded.length + 1; }
  append(records: readonly CoreAppendRecord[]): Promise<number[]> {
    return Promise.resolve(records.map((r) => {
      const lsn = this.nextLsn;
      this.encoded.push({ lsn, kind: r.kind, timestamp: r.timestamp, body: encode(r.body) });
      return lsn;
    }));
  }
  sync(): Promise<void> { return Promise.resolve(); }
  *read(from: { lsn?: number } = {}): IterableIterator<BrokerRecord> {
    for (const r of this.encoded.slice(Math.max(0, (from.lsn ?? 1) - 1))) yield { ...r, body: decode(r.body) };
  }
  loadSnapshot(): { lsn: number; data: Uint8Array } | undefined { return this.snapshotSaved; }
  writeSnapshot(lsn: number, data: Uint8Array): Promise<void> { this.snapshotSaved = { lsn, data }; return Promise.resolve(); }
}

class FakeLink implements MqttClientLink {
  readonly received: MqttOutgoingPublish[] = [];
  readonly pubrels: number[] = [];
  sendPublish(publish: MqttOutgoingPublish): boolean { this.received.push(publish); return true; }
  sendPubrel(packetId: number): void { this.pubrels.push(packetId); }
  takenOver(): void {}
}

class FakeConsumer implements AmqpConsumer {
  readonly held: QueueDelivery[] = [];
  constructor(readonly tag: string, readonly noAck: boolean, private readonly prefetch: number) {}
  canAccept(): boolean { return this.prefetch === 0 || this.held.length < this.prefetch; }
  deliver(delivery: QueueDelivery): void { if (!this.noAck) this.held.push(delivery); }
  cancelledByBroker(): void { this.held.length = 0; }
}

const clients = ['c0', 'c1', 'c2'];
const topics = ['a/b', 'a/c', 'x', 'a/b/c'];
const filters = ['a/b', 'a/+', '#', 'a/#', 'x'];
const queues = ['q0', 'q1', 'q2'];
const exchanges = ['amq.topic', 'amq.direct', 'amq.fanout', 'ex0', ''];
const keys = ['a.b', 'a.c', 'x', 'q0', 'q1', 'a.*', '#'];

const qos = fc.constantFrom<0 | 1 | 2>(0, 1, 2);
const payload = fc.uint8Array({ maxLength: 24 });
const command = fc.oneof(
  fc.record({ t: fc.constant('connect' as const), c: fc.constantFrom(...clients), clean: fc.boolean() }),
  fc.record({ t: fc.constant('detach' as const), c: fc.constantFrom(...clients) }),
  fc.record({ t: fc.constant('subscribe' as const), c: fc.constantFrom(...clients), f: fc.constantFrom(...filters), qos }),
  fc.record({ t: fc.constant('unsubscribe' as const), c: fc.constantFrom(...clients), f: fc.constantFrom(...filters) }),
  fc.record({ t: fc.constant('publish' as const), c: fc.constantFrom(...clients), topic: fc.constantFrom(...topics), p: payload, qos, retain: fc.boolean(), id: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ t: fc.constant('ackMqtt' as const), c: fc.constantFrom(...clients), how: fc.constantFrom('puback', 'pubrec', 'pubcomp', 'pubrel'), n: fc.nat(5) }),
  fc.record({ t: fc.constant('declare' as const), q: fc.constantFrom(...queues), durable: fc.boolean() }),
  fc.record({ t: fc.constant('deleteQueue' as const), q: fc.constantFrom(...queues) }),
  fc.record({ t: fc.constant('purge' as const), q: fc.constantFrom(...queues) }),
  fc.record({ t: fc.constant('bind' as const), q: fc.constantFrom(...queues), x: fc.constantFrom(...exchanges.slice(0, 4)), k: fc.constantFrom(...keys), unbind: fc.boolean() }),
  fc.record({ t: fc.constant('amqpPublish' as const), x: fc.constantFrom(...exchanges), k: fc.constantFrom(...keys), p: payload, persistent: fc.boolean() }),
  fc.record({ t: fc.constant('consume' as const), q: fc.constantFrom(...queues), prefetch: fc.nat(3), noAck: fc.boolean() }),
  fc.record({ t: fc.constant('settle' as const), n: fc.nat(5), outcome: fc.constantFrom('ack', 'reject', 'requeue') }),
  fc.record({ t: fc.constant('get' as const), q: fc.constantFrom(...queues) }),
  fc.record({ t: fc.constant('snapshot' as const) }),
  fc.record({ t: fc.constant('exchange' as const), x: fc.constantFrom('ex0', 'ex1'), type: fc.constantFrom('direct', 'fanout', 'topic'), durable: fc.boolean(), remove: fc.boolean() }),
);

type Command = typeof command extends fc.Arbitrary<infer C> ? C : never;

class Harness {
  readonly log = new EncodingMemoryLog();
  readonly broker = Broker.open({ log: this.log, ingestRoutes: [{ filter: 'a/#', collection: 'readings' }], limits: { sessionQueueMessagesMax: 3, queueReadyMessagesMax: 4, sessionInflightMessagesMax: 2, snapshotEveryRecords: 0 }, clock: () => 1_700_000_000_000 + this.log.nextLsn });
  readonly handles = new Map<string, { handle: MqttSessionHandle; link: FakeLink }>();
  readonly consumers: FakeConsumer[] = [];
  readonly gotten: QueueDelivery[] = [];
  private consumerCount = 0;

  async run(c: Command): Promise<void> {
    const { mqtt, amqp } = this.broker;
    // MQTT commands for a client that is not connected first connect it with a persistent session, so most sequences reach the durable paths.
    if ('c' in c && c.t !== 'connect' && c.t !== 'detach' && !this.handles.has(c.c)) await this.run({ t: 'connect', c: c.c, clean: false });
    const session = 'c' in c ? this.handles.get(c.c) : undefined;
    try {
      switch (c.t) {
        case 'connect': {
          const link = new FakeLink();
          const { session: handle, durable } = mqtt.connect(c.c, c.clean, link);
          await durable;
          handle.start();
          this.handles.set(c.c, { handle, link });
          break;
        }
        case 'detach': session?.handle.detach(); this.handles.delete(c.c); break;
        case 'subscribe': if (session) { const r = session.handle.subscribe([{ filter: c.f, qos: c.qos }]); await r.durable; session.handle.sendRetained([c.f]); } break;
        case 'unsubscribe': await session?.handle.unsubscribe([c.f]); break;
        case 'publish': if (session) await session.handle.publish({ topic: c.topic, payload: c.p, qos: c.qos, retain: c.retain, ...(c.qos > 0 ? { packetId: c.id } : {}) }).durable; break;
        case 'ackMqtt': if (session) await this.ackMqtt(session, c.how, c.n); break;
        case 'declare': await amqp.declareQueue(c.q, { passive: false, durable: c.durable, exclusive: false, autoDelete: false, arguments: {}, owner: 'o' }).durable; break;
        case 'deleteQueue': await amqp.deleteQueue(c.q, { ifUnused: false, ifEmpty: false, owner: 'o' }).durable; break;
        case 'purge': await amqp.purgeQueue(c.q, 'o').durable; break;
        case 'bind': await (c.unbind ? amqp.unbindQueue(c.q, c.x, c.k, 'o') : amqp.bindQueue(c.q, c.x, c.k, 'o')); break;
        case 'amqpPublish': await amqp.publish({ exchange: c.x, routingKey: c.k, body: c.p, properties: new Uint8Array([0x10, 0, c.persistent ? 2 : 1]) }, { persistent: c.persistent, from: 'pub' }).durable; break;
        case 'consume': { const consumer = new FakeConsumer(`t${this.consumerCount++}`, c.noAck, c.prefetch); amqp.consume(c.q, consumer, { exclusive: false, owner: 'o' }); this.consumers.push(consumer); break; }
        case 'settle': this.settle(c.n, c.outcome); break;
        case 'get': { const { delivery } = amqp.get(c.q, { noAck: false, owner: 'o' }); if (delivery) this.gotten.push(delivery); break; }
        case 'snapshot': await this.broker.snapshot(); break;
        case 'exchange':
          if (c.remove) await amqp.deleteExchange(c.x, { ifUnused: false });
          else await amqp.declareExchange(c.x, c.type, { passive: false, durable: c.durable, autoDelete: false, internal: false, arguments: {} });
          break;
      }
    } catch (error) {
      if ((error as { name?: string }).name !== 'BrokerError') throw error;
    }
    await this.broker.flush();
  }

  private async ackMqtt(session: { handle: MqttSessionHandle; link: FakeLink }, how: string, n: number): Promise<void> {
    const withIds = session.link.received.filter((p) => p.packetId !== undefined);
    const target = withIds[n % Math.max(1, withIds.length)];
    if (how === 'pubcomp') { const id = session.link.pubrels[n % Math.max(1, session.link.pubrels.length)]; if (id !== undefined) session.handle.pubcomp(id); return; }
    if (how === 'pubrel') { await session.handle.pubrel(1 + (n % 4)); return; }
    if (!target?.packetId) return;
    if (how === 'puback') session.handle.puback(target.packetId);
    else session.handle.pubrec(target.packetId);
  }

  private settle(n: number, outcome: 'ack' | 'reject' | 'requeue'): void {
    const held = [...this.consumers.flatMap((c) => c.held.map((d) => ({ d, from: c.held }))), ...this.gotten.map((d) => ({ d, from: this.gotten }))];
    const pick = held[n % Math.max(1, held.length)];
    if (!pick) return;
    pick.from.splice(pick.from.indexOf(pick.d), 1);
    this.broker.amqp.settle(pick.d, outcome);
    for (const consumer of this.consumers) this.broker.amqp.dispatch(pick.d.queue);
  }

  replayed(): EncodedState {
    const state = initialState();
    for (const r of this.log.read()) apply(state, r);
    return encodeState(state);
  }

  fromSnapshotPlusTail(): EncodedState | undefined {
    const snapshot = this.log.loadSnapshot();
    if (!snapshot) return undefined;
    const state = decodeState(decode(snapshot.data) as EncodedState);
    for (const r of this.log.read({ lsn: snapshot.lsn + 1 })) apply(state, r);
    return encodeState(state);
  }
}

describe('live state equals replayed state', () => {
  it('after every command, and from a snapshot plus the tail', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 5, maxLength: 80, size: 'large' }), async (commands) => {
        const harness = new Harness();
        for (const c of commands) {
          await harness.run(c);
          const live = encodeState(harness.broker.state);
          expect(harness.replayed()).toEqual(live);
          const fromSnapshot = harness.fromSnapshotPlusTail();
          if (fromSnapshot) expect(fromSnapshot).toEqual(live);
        }
        // A restart over the same log gives the same state again.
        const restarted = Broker.open({ log: harness.log, ingestRoutes: [{ filter: 'a/#', collection: 'readings' }] });
        expect(encodeState(restarted.state)).toEqual(encodeState(harness.broker.state));
        // ...and its runtime holds every recovered message ready, in seq order.
        for (const queue of restarted.state.queues.values()) {
          const runtime = restarted.queues.get(queue.name)!;
          const seqs: number[] = [];
          for (let d = restarted.amqp.get(queue.name, { noAck: false, owner: 'o' }).delivery; d; d = restarted.amqp.get(queue.name, { noAck: false, owner: 'o' }).delivery) seqs.push(d.seq);
          expect(seqs).toEqual([...queue.pending.keys()]);
          expect(runtime.unacked.size).toBe(seqs.length);
        }
      }),
      { numRuns: 150 },
    );
  });
});
