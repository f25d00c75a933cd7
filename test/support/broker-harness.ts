/**
 * Drives the real broker core with generated commands, as the protocol front
 * ends would: MQTT sessions with fake links that acknowledge what they choose
 * to, AMQP queues with fake consumers. The records under test are the ones the
 * broker really writes. Used by the live-equals-replay property (in-memory
 * log) and the broker power-loss property (segmented log on a simulated disk).
 */
import { decode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { Broker, type BrokerLog } from '../../src/core/broker.js';
import type { MqttSessionHandle, QueueDelivery, TransactionOperation } from '../../src/core/api.js';
import type { CoreLimits } from '../../src/core/limits.js';
import { replayGrouped } from '../../src/projections/transaction-groups.js';
import { decodeState, encodeState, type EncodedState } from '../../src/projections/snapshot-codec.js';
import { initialState } from '../../src/projections/state.js';
import { encodeProperties, type FieldTable } from '../../src/protocols/amqp/codec/index.js';
import { HoldingConsumer, RecordingLink } from './inspect-workload.js';
import { ManualClock } from './manual-clock.js';

export const ingestRoutes = [{ filter: 'a/#', collection: 'readings' }];
/** Small bounds, so that sequences reach the drops and the limits. */
const harnessLimits: Partial<CoreLimits> = { sessionQueueMessagesMax: 3, queueReadyMessagesMax: 4, sessionInflightMessagesMax: 2, snapshotEveryRecords: 0 };

const clients = ['c0', 'c1', 'c2'];
const topics = ['a/b', 'a/c', 'x', 'a/b/c'];
/** Plain filters and shared-subscription groups (`$share/...`), so sessions are members of groups too. */
const filters = ['a/b', 'a/+', '#', 'a/#', 'x', '$share/g/a/+', '$share/h/#'];
const queues = ['q0', 'q1', 'q2'];
/**
 * Fixed per name, so a redeclare always matches: length limits drop and refuse along the way, and
 * rejected, expired and overflowing messages are dead-lettered (q0 → q1 through the default
 * exchange, q1 → whatever is bound to amq.fanout, q2 → ex0 when it exists).
 */
const queueArguments: Readonly<Record<string, Record<string, unknown>>> = {
  q0: { 'x-message-ttl': 50, 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'q1' },
  q1: { 'x-max-length': 2, 'x-dead-letter-exchange': 'amq.fanout', 'x-delivery-limit': 1 },
  // ex0 may route nowhere: a message past the delivery limit is then a drop with why=delivery_limit.
  q2: { 'x-max-length-bytes': 30, 'x-overflow': 'reject-publish-dlx', 'x-dead-letter-exchange': 'ex0', 'x-delivery-limit': 0, 'x-single-active-consumer': true },
};
const exchanges = ['amq.topic', 'amq.direct', 'amq.fanout', 'ex0', 'ex1', 'amq.headers', ''];
const keys = ['a.b', 'a.c', 'x', 'q0', 'q1', 'a.*', '#'];
/** Binding arguments (a headers exchange matches on them; other types only tell bindings apart) and message headers. */
const bindingArguments = fc.option(fc.constantFrom<FieldTable>(
  { 'x-match': { type: 'S', value: 'any' }, colour: { type: 'S', value: 'red' }, n: { type: 'I', value: 1 } },
  { colour: { type: 'S', value: 'blue' } },
  { 'x-match': { type: 'S', value: 'all-with-x' }, 'x-tenant': { type: 'S', value: 'a' } },
), { nil: undefined });
const messageHeaders = fc.option(fc.constantFrom<FieldTable>(
  { colour: { type: 'S', value: 'red' } },
  { colour: { type: 'S', value: 'blue' }, 'x-tenant': { type: 'S', value: 'a' } },
  { n: { type: 'l', value: 1n } },
), { nil: undefined });

const qos = fc.constantFrom<0 | 1 | 2>(0, 1, 2);
const payload = fc.uint8Array({ maxLength: 24 });
/**
 * MQTT 5 properties on some publishes (the msg and retain records' `m`). An expiry of 0 s expires at the
 * first pump (a `drop` with why=expired); 1 s expires after a 1000 ms tick of the harness clock.
 */
const mqtt5Properties = fc.option(
  fc.record(
    {
      messageExpiryInterval: fc.constantFrom(0, 1),
      contentType: fc.constant('text/plain'),
      correlationData: fc.constant(new Uint8Array([7, 8])),
      userProperties: fc.constant([['k', 'v'], ['k', 'w']] as const),
      payloadFormatIndicator: fc.constant(true),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);
/**
 * MQTT 5 subscription options on some subscriptions (the sub record's `nl`, `rap`, `rh`, `id`; kept in
 * the snapshot's subscription rows). No Local is left out for shared filters, which refuse it.
 */
const subscriptionOptions = fc.option(
  fc.record(
    {
      noLocal: fc.boolean(),
      retainAsPublished: fc.boolean(),
      retainHandling: fc.constantFrom<0 | 1 | 2>(0, 1, 2),
      identifier: fc.constantFrom(1, 2, 268_435_455),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);
const transactionOperation = fc.oneof(
  fc.record({ op: fc.constant('publish' as const), q: fc.constantFrom(...queues), p: payload, persistent: fc.boolean() }),
  fc.record({ op: fc.constant('settle' as const), n: fc.nat(5), outcome: fc.constantFrom<'ack' | 'reject' | 'requeue'>('ack', 'reject', 'requeue') }),
);
export const brokerCommand = fc.oneof(
  // `will`: the connection's will, handed to the core when a later connect takes the session over (at once, or delayed 1 s).
  fc.record({ t: fc.constant('connect' as const), c: fc.constantFrom(...clients), clean: fc.boolean(), will: fc.constantFrom(0, 1) }, { requiredKeys: ['t', 'c', 'clean'] }),
  // MQTT 5: Clean Start and a session expiry (0 ends at detach; 60 s gives an `offline` record).
  fc.record(
    { t: fc.constant('connect5' as const), c: fc.constantFrom(...clients), clean: fc.boolean(), expiry: fc.constantFrom(0, 60, 0xffffffff), will: fc.constantFrom(0, 1) },
    { requiredKeys: ['t', 'c', 'clean', 'expiry'] },
  ),
  // A will on some detaches: at once (no delay), or delayed 1 s (a 1000 ms tick publishes it, a reconnect cancels it; a session of expiry 0 publishes it at once).
  fc.record({ t: fc.constant('detach' as const), c: fc.constantFrom(...clients), will: fc.option(fc.constantFrom(0, 1), { nil: undefined }), p: payload }),
  fc.record({ t: fc.constant('subscribe' as const), c: fc.constantFrom(...clients), f: fc.constantFrom(...filters), qos, options: subscriptionOptions }),
  fc.record({ t: fc.constant('unsubscribe' as const), c: fc.constantFrom(...clients), f: fc.constantFrom(...filters) }),
  fc.record({ t: fc.constant('publish' as const), c: fc.constantFrom(...clients), topic: fc.constantFrom(...topics), p: payload, qos, retain: fc.boolean(), id: fc.integer({ min: 1, max: 4 }), props: mqtt5Properties }),
  fc.record({ t: fc.constant('ackMqtt' as const), c: fc.constantFrom(...clients), how: fc.constantFrom('puback', 'pubrec', 'pubcomp', 'pubrel'), n: fc.nat(5) }),
  fc.record({ t: fc.constant('declare' as const), q: fc.constantFrom(...queues), durable: fc.boolean() }),
  fc.record({ t: fc.constant('deleteQueue' as const), q: fc.constantFrom(...queues) }),
  fc.record({ t: fc.constant('purge' as const), q: fc.constantFrom(...queues) }),
  fc.record({ t: fc.constant('bind' as const), q: fc.constantFrom(...queues), x: fc.constantFrom(...exchanges.slice(0, 6)), k: fc.constantFrom(...keys), unbind: fc.boolean(), a: bindingArguments }),
  // Exchange-to-exchange bindings, loops included (ex0 ⇄ ex1).
  fc.record({ t: fc.constant('bindExchange' as const), d: fc.constantFrom('ex0', 'ex1', 'amq.fanout'), x: fc.constantFrom('amq.topic', 'amq.direct', 'ex0', 'ex1'), k: fc.constantFrom(...keys), unbind: fc.boolean(), a: bindingArguments }),
  fc.record({ t: fc.constant('amqpPublish' as const), x: fc.constantFrom(...exchanges), k: fc.constantFrom(...keys), p: payload, persistent: fc.boolean(), expiration: fc.option(fc.constantFrom('0', '20', '100')), headers: messageHeaders }),
  fc.record({ t: fc.constant('consume' as const), q: fc.constantFrom(...queues), prefetch: fc.nat(3), noAck: fc.boolean() }),
  // An AMQP transaction: publishes and settlements committed as one group of records.
  fc.record({ t: fc.constant('tx' as const), ops: fc.array(transactionOperation, { minLength: 1, maxLength: 5 }) }),
  fc.record({ t: fc.constant('settle' as const), n: fc.nat(5), outcome: fc.constantFrom('ack', 'reject', 'requeue') }),
  fc.record({ t: fc.constant('get' as const), q: fc.constantFrom(...queues) }),
  fc.record({ t: fc.constant('snapshot' as const) }),
  fc.record({ t: fc.constant('tick' as const), ms: fc.constantFrom(10, 60, 1000) }),
  // Straight to a queue through the default exchange: TTLs, rejections and limits meet often.
  fc.record({ t: fc.constant('amqpPublish' as const), x: fc.constant(''), k: fc.constantFrom(...queues), p: payload, persistent: fc.constant(true), expiration: fc.option(fc.constantFrom('0', '20', '100')), headers: fc.constant(undefined) }),
  fc.record({
    t: fc.constant('exchange' as const), x: fc.constantFrom('ex0', 'ex1'), type: fc.constantFrom('direct', 'fanout', 'topic', 'headers'), durable: fc.boolean(), remove: fc.boolean(),
    ae: fc.option(fc.constantFrom('ex0', 'ex1', 'amq.fanout'), { nil: undefined }), internal: fc.boolean(),
  }),
);

/**
 * AMQP queue life only, with durable queues and persistent messages most of the time: sequences
 * where TTLs run out, consumers reject and limits overflow, so dead-lettering and expiry records
 * (msg with `d`, drop `expired`) are common rather than rare.
 */
export const queueLifeCommand = fc.oneof(
  { weight: 2, arbitrary: fc.record({ t: fc.constant('declare' as const), q: fc.constantFrom(...queues), durable: fc.constantFrom(true, true, true, false) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('bind' as const), q: fc.constantFrom(...queues), x: fc.constantFrom('amq.fanout', 'ex0'), k: fc.constantFrom(...keys), unbind: fc.constant(false), a: fc.constant(undefined) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('exchange' as const), x: fc.constantFrom('ex0'), type: fc.constant('fanout'), durable: fc.constant(true), remove: fc.boolean(), ae: fc.constant(undefined), internal: fc.constant(false) }) },
  { weight: 5, arbitrary: fc.record({ t: fc.constant('amqpPublish' as const), x: fc.constant(''), k: fc.constantFrom(...queues), p: payload, persistent: fc.boolean(), expiration: fc.option(fc.constantFrom('0', '20', '100')), headers: fc.constant(undefined) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('consume' as const), q: fc.constantFrom(...queues), prefetch: fc.nat(3), noAck: fc.constant(false) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('get' as const), q: fc.constantFrom(...queues) }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('settle' as const), n: fc.nat(5), outcome: fc.constantFrom('ack', 'reject', 'reject', 'requeue') }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('tick' as const), ms: fc.constantFrom(10, 60, 1000) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('snapshot' as const) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('deleteQueue' as const), q: fc.constantFrom(...queues) }) },
);

export type BrokerCommand = typeof brokerCommand extends fc.Arbitrary<infer C> ? C : never;

/** Drives a real broker core over `log` with commands, as MQTT and AMQP connections would. */
export class BrokerHarness {
  readonly broker: Broker;
  readonly handles = new Map<string, { handle: MqttSessionHandle; link: RecordingLink }>();
  readonly consumers: HoldingConsumer[] = [];
  readonly gotten: QueueDelivery[] = [];
  /** Moves only on `tick`: message TTLs expire when the sequence says so. */
  readonly clock = new ManualClock(1_700_000_000_000);
  private consumerCount = 0;

  constructor(readonly log: BrokerLog, limits: Partial<CoreLimits> = {}) {
    this.broker = Broker.open({ log, ingestRoutes, limits: { ...harnessLimits, ...limits }, clock: this.clock.now, timers: this.clock });
  }

  async run(c: BrokerCommand): Promise<void> {
    const { mqtt, amqp } = this.broker;
    // MQTT commands for a client that is not connected first connect it with a persistent session, so most sequences reach the durable paths.
    if ('c' in c && c.t !== 'connect' && c.t !== 'connect5' && c.t !== 'detach' && !this.handles.has(c.c)) await this.run({ t: 'connect', c: c.c, clean: false });
    const session = 'c' in c ? this.handles.get(c.c) : undefined;
    try {
      switch (c.t) {
        case 'connect':
        case 'connect5': {
          const link = new RecordingLink(c.will === undefined ? undefined : { topic: 'a/will', payload: new Uint8Array([c.will]), qos: 1, retain: false, delayInterval: c.will });
          const options = c.t === 'connect5' ? { sessionExpiryInterval: c.expiry } : {};
          const { session: handle, durable } = mqtt.connect(c.c, c.clean, link, undefined, options);
          await durable;
          handle.start();
          this.handles.set(c.c, { handle, link });
          break;
        }
        case 'detach': {
          const will = c.will === undefined ? undefined : { topic: 'a/will', payload: c.p, qos: 1 as const, retain: c.will === 1, delayInterval: c.will, properties: { contentType: 'w' } };
          await session?.handle.detach(undefined, will);
          this.handles.delete(c.c);
          break;
        }
        case 'subscribe': if (session) {
          const options = c.options === undefined || !c.f.startsWith('$share/') ? c.options : { ...c.options, noLocal: false };
          const r = session.handle.subscribe([{ filter: c.f, qos: c.qos, options }]);
          await r.durable;
          session.handle.sendRetained(r.retainedFilters);
        } break;
        case 'unsubscribe': await session?.handle.unsubscribe([c.f]); break;
        case 'publish': if (session) await session.handle.publish({ topic: c.topic, payload: c.p, qos: c.qos, retain: c.retain, ...(c.qos > 0 ? { packetId: c.id } : {}), properties: c.props }).durable; break;
        case 'ackMqtt': if (session) await this.ackMqtt(session, c.how, c.n); break;
        case 'declare': await amqp.declareQueue(c.q, { passive: false, durable: c.durable, exclusive: false, autoDelete: false, arguments: queueArguments[c.q] ?? {}, owner: 'o' }).durable; break;
        case 'deleteQueue': await amqp.deleteQueue(c.q, { ifUnused: false, ifEmpty: false, owner: 'o' }).durable; break;
        case 'purge': await amqp.purgeQueue(c.q, 'o').durable; break;
        case 'bind': await (c.unbind ? amqp.unbindQueue(c.q, c.x, c.k, 'o', c.a) : amqp.bindQueue(c.q, c.x, c.k, 'o', c.a)); break;
        case 'bindExchange': await (c.unbind ? amqp.unbindExchange(c.d, c.x, c.k, c.a) : amqp.bindExchange(c.d, c.x, c.k, c.a)); break;
        case 'amqpPublish': {
          const headers = c.headers !== undefined ? { headers: c.headers } : {};
          const properties = encodeProperties({ deliveryMode: c.persistent ? 2 : 1, ...(c.expiration === null ? {} : { expiration: c.expiration }), ...headers });
          await amqp.publish({ exchange: c.x, routingKey: c.k, body: c.p, properties }, { persistent: c.persistent, from: 'pub' }).durable;
          break;
        }
        case 'consume': { const consumer = new HoldingConsumer(`t${this.consumerCount++}`, c.noAck, c.prefetch); amqp.consume(c.q, consumer, { exclusive: false, owner: 'o' }); this.consumers.push(consumer); break; }
        case 'settle': this.settle(c.n, c.outcome); break;
        case 'tx': await this.transaction(c.ops); break;
        case 'get': { const { delivery } = amqp.get(c.q, { noAck: false, owner: 'o' }); if (delivery) this.gotten.push(delivery); break; }
        case 'snapshot': await this.broker.snapshot(); break;
        case 'tick': this.clock.advance(c.ms); break;
        case 'exchange':
          if (c.remove) await amqp.deleteExchange(c.x, { ifUnused: false });
          else {
            const internal = c.internal;
            const args = c.ae !== undefined ? { 'alternate-exchange': c.ae } : {};
            await amqp.declareExchange(c.x, c.type, { passive: false, durable: c.durable, autoDelete: false, internal, arguments: args });
          }
          break;
      }
    } catch (error) {
      if ((error as { name?: string }).name !== 'BrokerError') throw error;
    }
    await this.broker.flush();
  }

  private async ackMqtt(session: { handle: MqttSessionHandle; link: RecordingLink }, how: string, n: number): Promise<void> {
    const withIds = session.link.received.filter((p) => p.packetId !== undefined);
    const target = withIds[n % Math.max(1, withIds.length)];
    if (how === 'pubcomp') { const id = session.link.pubrels[n % Math.max(1, session.link.pubrels.length)]; if (id !== undefined) session.handle.pubcomp(id); return; }
    if (how === 'pubrel') { await session.handle.pubrel(1 + (n % 4)); return; }
    if (!target?.packetId) return;
    if (how === 'puback') session.handle.puback(target.packetId);
    else session.handle.pubrec(target.packetId);
  }

  private settle(n: number, outcome: 'ack' | 'reject' | 'requeue'): void {
    const picked = this.takeHeld(n);
    if (!picked) return;
    this.broker.amqp.settle(picked, outcome);
    this.broker.amqp.dispatch(picked.queue);
  }

  /** One of the deliveries consumers and basic.get hold, no longer held. */
  private takeHeld(n: number): QueueDelivery | undefined {
    const held = [...this.consumers.flatMap((c) => c.held.map((d) => ({ d, from: c.held }))), ...this.gotten.map((d) => ({ d, from: this.gotten }))];
    const pick = held[n % Math.max(1, held.length)];
    if (!pick) return undefined;
    pick.from.splice(pick.from.indexOf(pick.d), 1);
    return pick.d;
  }

  private async transaction(ops: ReadonlyArray<{ op: 'publish'; q: string; p: Uint8Array; persistent: boolean } | { op: 'settle'; n: number; outcome: 'ack' | 'reject' | 'requeue' }>): Promise<void> {
    const operations: TransactionOperation[] = [];
    for (const o of ops) {
      if (o.op === 'publish') {
        const message = { exchange: '', routingKey: o.q, body: o.p, properties: encodeProperties({ deliveryMode: o.persistent ? 2 : 1 }) };
        operations.push({ kind: 'publish', message, persistent: o.persistent, from: 'tx' });
        continue;
      }
      const delivery = this.takeHeld(o.n);
      if (delivery) operations.push({ kind: 'settle', delivery, outcome: o.outcome });
    }
    const { durable } = this.broker.amqp.commitTransaction(operations);
    for (const queue of queues) this.broker.amqp.dispatch(queue);
    await durable;
  }

  replayed(): EncodedState {
    const state = initialState();
    replayGrouped(state, this.log.read());
    return encodeState(state);
  }

  fromSnapshotPlusTail(): EncodedState | undefined {
    const snapshot = this.log.loadSnapshot?.();
    if (!snapshot) return undefined;
    const state = decodeState(decode(snapshot.data) as EncodedState);
    replayGrouped(state, this.log.read({ lsn: snapshot.lsn + 1 }));
    return encodeState(state);
  }
}

