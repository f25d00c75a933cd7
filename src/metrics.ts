/**
 * Prometheus metrics, on a Registry of Cairn's own (never prom-client's global
 * one, so two brokers in one process — tests, embedding — never share series).
 *
 * Two kinds of series:
 * - Events the hot paths report through cheap methods (`messageIn`,
 *   `messageOut`, `fsync`, `drop`, `connectionOpened`/`Closed`): a counter or
 *   histogram child per label value is resolved once, here, so a call costs an
 *   addition, never a label lookup.
 * - State computed only when scraped (`collectFrom(broker)`): queue depths,
 *   session queues, the log position and size, and the count of appended
 *   records derived from the log's nextLsn. Nothing is counted on the hot path
 *   for these, so they cannot drift from the broker's state.
 *
 * Per-queue series are capped at `queueSeriesMax` queues (the rest are summed
 * in the totals only), so a client declaring many queues cannot blow up a scrape.
 */
import { Counter, Gauge, Histogram, Registry, type Counter as CounterType } from 'prom-client';
import { assert } from './assert.js';
import type { Broker } from './core/broker.js';
import { logPositionOf } from './http/log-position.js';

export type MetricsProtocol = 'mqtt' | 'amqp';
export type DropDestination = 'session' | 'queue';
export const metricsProtocols: readonly MetricsProtocol[] = ['mqtt', 'amqp'];

/** Queues beyond this many get no series of their own (they still count in the totals). */
export const queueSeriesMax = 500;

/** Metric names, exported so tests and dashboards agree on them. */
export const metricNames = {
  messagesIn: 'cairn_messages_received_total',
  messagesOut: 'cairn_messages_delivered_total',
  fsyncs: 'cairn_log_fsyncs_total',
  fsyncSeconds: 'cairn_log_fsync_seconds',
  batchRecords: 'cairn_log_batch_records',
  recordsAppended: 'cairn_log_records_appended_total',
  logNextLsn: 'cairn_log_next_lsn',
  logDurableLsn: 'cairn_log_durable_lsn',
  logFirstLsn: 'cairn_log_first_lsn',
  logBytes: 'cairn_log_bytes',
  logSegments: 'cairn_log_segments',
  drops: 'cairn_messages_dropped_total',
  droppedHeld: 'cairn_destination_dropped_messages',
  connections: 'cairn_connections',
  connectionsOpened: 'cairn_connections_opened_total',
  mqttSessions: 'cairn_mqtt_sessions',
  sessionPending: 'cairn_mqtt_session_pending_messages',
  sessionInflight: 'cairn_mqtt_session_inflight_messages',
  queues: 'cairn_amqp_queues',
  queueMessages: 'cairn_amqp_queue_messages',
  queueConsumers: 'cairn_amqp_queue_consumers',
  collectionDocuments: 'cairn_collection_documents',
} as const;

/** Plain totals, for rates in the HTTP overview without parsing the registry. */
export interface MetricsTotals {
  readonly messagesIn: Readonly<Record<MetricsProtocol, number>>;
  readonly messagesOut: Readonly<Record<MetricsProtocol, number>>;
  readonly fsyncs: number;
}

type ProtocolCounters = Record<MetricsProtocol, ReturnType<CounterType<'protocol'>['labels']>>;

export class Metrics {
  readonly registry = new Registry();
  private readonly in: ProtocolCounters;
  private readonly out: ProtocolCounters;
  private readonly inTotals: Record<MetricsProtocol, number> = { mqtt: 0, amqp: 0 };
  private readonly outTotals: Record<MetricsProtocol, number> = { mqtt: 0, amqp: 0 };
  private fsyncTotal = 0;
  private readonly fsyncCounter: Counter;
  private readonly fsyncSeconds: Histogram;
  private readonly batchRecords: Histogram;
  private readonly drops: Counter<'destination'>;
  private readonly connections: Gauge<'protocol'>;
  private readonly connectionsOpened: Counter<'protocol'>;
  private readonly connectionCounts: Record<MetricsProtocol, number> = { mqtt: 0, amqp: 0 };
  private collecting: Broker | undefined = undefined;

  constructor() {
    const registers = [this.registry];
    const messagesIn = new Counter({ name: metricNames.messagesIn, help: 'Messages published to the broker, by protocol of the publisher', labelNames: ['protocol'] as const, registers });
    const messagesOut = new Counter({ name: metricNames.messagesOut, help: 'Messages delivered to clients, by protocol of the receiver', labelNames: ['protocol'] as const, registers });
    this.in = { mqtt: messagesIn.labels('mqtt'), amqp: messagesIn.labels('amqp') };
    this.out = { mqtt: messagesOut.labels('mqtt'), amqp: messagesOut.labels('amqp') };
    this.fsyncCounter = new Counter({ name: metricNames.fsyncs, help: 'fdatasync calls on log segments', registers });
    this.fsyncSeconds = new Histogram({
      name: metricNames.fsyncSeconds, help: 'Duration of one log fdatasync', registers,
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    });
    this.batchRecords = new Histogram({
      name: metricNames.batchRecords, help: 'Records made durable by one fdatasync (group commit batch size)', registers,
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096],
    });
    this.drops = new Counter({ name: metricNames.drops, help: 'Messages dropped because a session or queue was at its bound', labelNames: ['destination'] as const, registers });
    this.connections = new Gauge({ name: metricNames.connections, help: 'Open client connections, by protocol', labelNames: ['protocol'] as const, registers });
    this.connectionsOpened = new Counter({ name: metricNames.connectionsOpened, help: 'Client connections accepted, by protocol', labelNames: ['protocol'] as const, registers });
    // Every series exists from the start at 0, so rate() and dashboards see it before the first event.
    for (const destination of ['session', 'queue'] as const) this.drops.inc({ destination }, 0);
    for (const protocol of metricsProtocols) {
      messagesIn.inc({ protocol }, 0);
      messagesOut.inc({ protocol }, 0);
      this.connections.set({ protocol }, 0);
      this.connectionsOpened.inc({ protocol }, 0);
    }
  }

  /** A PUBLISH (MQTT) or basic.publish (AMQP) accepted by the core. Call once per message, in the protocol's publish handler. */
  messageIn(protocol: MetricsProtocol): void {
    this.in[protocol].inc();
    this.inTotals[protocol]++;
  }

  /** A message written to a client (PUBLISH or basic.deliver / get-ok). Call where the link sends it. */
  messageOut(protocol: MetricsProtocol): void {
    this.out[protocol].inc();
    this.outTotals[protocol]++;
  }

  /** One fdatasync finished: how long it took and how many records it made durable. Call from the log's group commit. */
  fsync(seconds: number, records: number): void {
    this.fsyncCounter.inc();
    this.fsyncTotal++;
    this.fsyncSeconds.observe(seconds);
    this.batchRecords.observe(records);
  }

  /** Messages dropped at a session's or queue's bound. */
  drop(destination: DropDestination, count = 1): void {
    this.drops.inc({ destination }, count);
  }

  connectionOpened(protocol: MetricsProtocol): void {
    this.connectionCounts[protocol]++;
    this.connections.set({ protocol }, this.connectionCounts[protocol]);
    this.connectionsOpened.inc({ protocol });
  }

  connectionClosed(protocol: MetricsProtocol): void {
    this.connectionCounts[protocol] = Math.max(0, this.connectionCounts[protocol] - 1);
    this.connections.set({ protocol }, this.connectionCounts[protocol]);
  }

  /** Open connections per protocol as reported through connectionOpened/Closed. */
  connectionCount(): Readonly<Record<MetricsProtocol, number>> {
    return { ...this.connectionCounts };
  }

  totals(): MetricsTotals {
    return { messagesIn: { ...this.inTotals }, messagesOut: { ...this.outTotals }, fsyncs: this.fsyncTotal };
  }

  /** Register the gauges computed from the broker at scrape time. Idempotent for one broker; one registry describes one broker. */
  collectFrom(broker: Broker): void {
    if (this.collecting === broker) return;
    assert(this.collecting === undefined, 'Metrics.collectFrom: this registry already describes another broker');
    this.collecting = broker;
    registerBrokerGauges(this.registry, broker);
  }

  /** The Prometheus text exposition. */
  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/** Gauges (and one derived counter) read from the broker's state and log at scrape time. */
function registerBrokerGauges(registry: Registry, broker: Broker): void {
  const registers = [registry];
  let countedUpTo = broker.log.nextLsn;
  const recordsAppended = new Counter({
    name: metricNames.recordsAppended, help: 'Records appended to the log by this process (derived from the log position at scrape)', registers,
    collect() {
      const nextLsn = broker.log.nextLsn;
      if (nextLsn > countedUpTo) this.inc(nextLsn - countedUpTo);
      countedUpTo = nextLsn;
    },
  });
  recordsAppended.inc(0);
  const logGauge = (name: string, help: string, read: (position: ReturnType<typeof logPositionOf>) => number | undefined): void => {
    new Gauge({
      name, help, registers,
      collect() {
        const value = read(logPositionOf(broker.log));
        if (value !== undefined) this.set(value);
      },
    });
  };
  logGauge(metricNames.logNextLsn, 'The LSN the next appended record gets', (p) => p.nextLsn);
  logGauge(metricNames.logDurableLsn, 'Every record up to this LSN is fsynced', (p) => p.durableLsn);
  logGauge(metricNames.logFirstLsn, 'The oldest LSN still in the log (retention removes older segments)', (p) => p.firstLsn);
  logGauge(metricNames.logBytes, 'Bytes in the log segment files', (p) => p.bytes);
  logGauge(metricNames.logSegments, 'Log segment files', (p) => p.segments?.length);
  registerSessionGauges(registers, broker);
  registerQueueGauges(registers, broker);
  new Gauge({
    name: metricNames.collectionDocuments, help: 'Documents in each ingest collection', labelNames: ['collection'] as const, registers,
    collect() {
      this.reset();
      for (const collection of broker.state.collections.values()) this.set({ collection: collection.name }, collection.documents.size);
    },
  });
}

function registerSessionGauges(registers: Registry[], broker: Broker): void {
  new Gauge({
    name: metricNames.mqttSessions, help: 'MQTT sessions, by whether a client is connected and whether the session is persistent', labelNames: ['connected', 'persistent'] as const, registers,
    collect() {
      const counts = new Map<string, number>([['true/true', 0], ['true/false', 0], ['false/true', 0], ['false/false', 0]]);
      for (const session of broker.sessions.values()) {
        const key = `${String(session.link !== undefined)}/${String(session.persistent)}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      for (const [key, count] of counts) {
        const [connected = '', persistent = ''] = key.split('/');
        this.set({ connected, persistent }, count);
      }
    },
  });
  new Gauge({
    name: metricNames.sessionPending, help: 'Messages queued in MQTT sessions (sent or not) waiting for their acknowledgement, summed over sessions', registers,
    collect() {
      let pending = 0;
      for (const session of broker.sessions.values()) pending += session.state.pending.size;
      this.set(pending);
    },
  });
  new Gauge({
    name: metricNames.sessionInflight, help: 'QoS 1/2 messages sent on MQTT connections and not acknowledged yet, summed over sessions', registers,
    collect() {
      let inflight = 0;
      for (const session of broker.sessions.values()) inflight += session.inflight.size;
      this.set(inflight);
    },
  });
  new Gauge({
    name: metricNames.droppedHeld, help: 'Messages dropped at their bound by the sessions and queues that exist now', labelNames: ['destination'] as const, registers,
    collect() {
      let sessions = 0;
      for (const session of broker.sessions.values()) sessions += session.state.dropped;
      let queues = 0;
      for (const queue of broker.queues.values()) queues += queue.dropped;
      this.set({ destination: 'session' }, sessions);
      this.set({ destination: 'queue' }, queues);
    },
  });
}

function registerQueueGauges(registers: Registry[], broker: Broker): void {
  new Gauge({
    name: metricNames.queues, help: 'AMQP queues, by durability', labelNames: ['durable'] as const, registers,
    collect() {
      let durable = 0;
      for (const queue of broker.queues.values()) if (queue.durable) durable++;
      this.set({ durable: 'true' }, durable);
      this.set({ durable: 'false' }, broker.queues.size - durable);
    },
  });
  new Gauge({
    name: metricNames.queueMessages, help: `Messages in AMQP queues by state (ready, unacked); one series per queue for the first ${queueSeriesMax} queues, and queue="" for the total`,
    labelNames: ['queue', 'state'] as const, registers,
    collect() {
      this.reset();
      let ready = 0;
      let unacked = 0;
      let series = 0;
      for (const queue of broker.queues.values()) {
        ready += queue.readyCount;
        unacked += queue.unacked.size;
        if (series++ >= queueSeriesMax) continue;
        this.set({ queue: queue.name, state: 'ready' }, queue.readyCount);
        this.set({ queue: queue.name, state: 'unacked' }, queue.unacked.size);
      }
      this.set({ queue: '', state: 'ready' }, ready);
      this.set({ queue: '', state: 'unacked' }, unacked);
    },
  });
  new Gauge({
    name: metricNames.queueConsumers, help: `Consumers of each AMQP queue (first ${queueSeriesMax} queues)`, labelNames: ['queue'] as const, registers,
    collect() {
      this.reset();
      let series = 0;
      for (const queue of broker.queues.values()) {
        if (series++ >= queueSeriesMax) break;
        this.set({ queue: queue.name }, queue.consumers.length);
      }
    },
  });
}
