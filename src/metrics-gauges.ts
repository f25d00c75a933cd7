/**
 * The gauges read from the broker's state, its log and its live connections
 * when scraped; nothing is counted on the hot paths for them, so they cannot
 * drift from what they describe.
 *
 * Object metrics (rabbitmq_queue_*) are unlabelled sums here, in the
 * aggregated registry (/metrics); /metrics/per-object has one series per
 * queue {vhost, queue} instead (metrics-per-queue.ts), as RabbitMQ's plugin
 * does. The aggregated sums always count every queue.
 */
import { hostname } from 'node:os';
import { Counter, Gauge, type Registry } from 'prom-client';
import { AssertionError } from './assert.js';
import type { Broker } from './core/broker.js';
import { queueTotals, type QueueTotals } from './core/queue-totals.js';
import { logPositionOf } from './http/log-position.js';
import { describeLogPin, type LogPinReport } from './log-pin-report.js';
import { oldestLiveMessage } from './projections/pins.js';
import type { LsnRange } from './log/index.js';
import type { ManagedConnection } from './protocols/connection-description.js';
import { metricNames } from './metric-names.js';
import { queueFamilies } from './metrics-per-queue.js';

export interface MetricsRegistries {
  readonly shared: Registry;
  readonly aggregated: Registry;
}

export interface ConnectionSource {
  /** The live client connections, when the caller has them (channels and consumers need them). */
  readonly clients?: () => Iterable<ManagedConnection>;
  /** Open connections when `clients` is absent. */
  readonly openConnections: () => number;
}

/** `exposition()` changes whenever an exposition begins (figures read once per exposition are shared by its families). */
export function registerBrokerGauges(registries: MetricsRegistries, broker: Broker, connections: ConnectionSource, exposition: () => number): void {
  const totals = oncePerExposition(() => queueTotals(broker), exposition);
  registerLogGauges([registries.shared], broker);
  registerPinGauges([registries.shared], broker);
  registerSessionGauges([registries.shared], broker);
  registerConnectionGauges([registries.shared], broker, connections, totals);
  registerQueueGauges(registries, totals);
  new Gauge({
    name: metricNames.collectionDocuments, help: 'Documents in each ingest collection', labelNames: ['collection'] as const, registers: [registries.shared],
    collect() {
      this.reset();
      for (const collection of broker.state.collections.values()) this.set({ collection: collection.name }, collection.documents.size);
    },
  });
}

/**
 * `compute` at most once per exposition (`exposition()` changes when one begins): the families of one answer that
 * show queue totals share one pass over the queues and show one moment, though the answer reads its families a
 * slice at a time with turns of the event loop between them (metrics.ts, textInSlices).
 */
function oncePerExposition<T>(compute: () => T, exposition: () => number): () => T {
  let value: { readonly of: T; readonly exposition: number } | undefined;
  return () => {
    if (value?.exposition !== exposition()) value = { of: compute(), exposition: exposition() };
    return value.of;
  };
}

function registerLogGauges(registers: Registry[], broker: Broker): void {
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
  logGauge(metricNames.logDamagedSegments, 'Segments before the newest snapshot found damaged or missing by the background history check (replay does not need them; point-in-time recovery does)', (p) => (p.history === null ? undefined : new Set(p.history.damage.map((d) => d.segment)).size));
  logGauge(metricNames.logUnrestorableLsns, 'LSNs that point-in-time recovery can no longer reach because of that damage (the ranges are in /api/overview)', (p) => (p.history === null ? undefined : unrestorableCount(p.history.unrestorable)));
  logGauge(metricNames.logHistoryChecked, '1 once the background history check has finished (intact or damaged), else 0', (p) => (p.history === null ? undefined : p.history.state === 'intact' || p.history.state === 'damaged' ? 1 : 0));
  const recovery = broker.recovery;
  if (recovery !== undefined) {
    new Gauge({ name: metricNames.replaySeconds, help: 'Time the last start-up took to load the snapshot and replay the log', registers }).set(recovery.replayMs / 1000);
    new Gauge({ name: metricNames.recordsReplayed, help: 'Records replayed after the snapshot at the last start-up', registers }).set(recovery.recordsReplayed);
  }
  // RabbitMQ's dashboards join every series on this one to name the node and cluster.
  const node = `cairn@${hostname()}`;
  new Gauge({
    name: metricNames.identityInfo, help: 'RabbitMQ node & cluster identity info (Cairn: one node, its own cluster)',
    labelNames: ['rabbitmq_node', 'rabbitmq_cluster', 'rabbitmq_cluster_permanent_id'] as const, registers,
  }).set({ rabbitmq_node: node, rabbitmq_cluster: node, rabbitmq_cluster_permanent_id: `cairn-${node}` }, 1);
}

/**
 * What pins the log (log-pin-report.ts). The pinned record's timestamp is read from the log once per pinned LSN
 * (a record never changes), so a scrape reads the log only when the pin has moved.
 */
function registerPinGauges(registers: Registry[], broker: Broker): void {
  let timestampOf: { lsn: number; timestamp: number | undefined } | undefined;
  const timestampAt = (lsn: number): number | undefined => {
    if (timestampOf?.lsn !== lsn) timestampOf = { lsn, timestamp: readTimestamp(broker, lsn) };
    return timestampOf.timestamp;
  };
  // One description per scrape, shared by the gauges below (as connectionFigures does).
  let described: { at: number; pin: LogPinReport | undefined } | undefined;
  const report = (): LogPinReport | undefined => {
    const now = Date.now();
    if (described?.at !== now) described = { at: now, pin: describeLogPin(oldestLiveMessage(broker.state), logPositionOf(broker.log).segments ?? [], timestampAt, now) };
    return described.pin;
  };
  const gauge = (name: string, help: string, read: (pin: LogPinReport | undefined) => number | undefined): void => {
    new Gauge({ name, help, registers, collect() { this.set(read(report()) ?? 0); } });
  };
  gauge(metricNames.logPinnedLsn, 'LSN of the oldest message still queued: no segment holding it or a later LSN is removed by retention (0 when nothing is queued)', (pin) => pin?.lsn);
  gauge(metricNames.logPinnedBytes, 'Bytes of the segment holding the oldest queued message and of every newer one: the least the log can shrink to while it stays queued (0 when nothing is queued)', (pin) => pin?.pinnedBytes);
  gauge(metricNames.oldestLiveMessageAge, 'Age of the oldest message still queued, from its record timestamp (0 when nothing is queued)', (pin) => pin?.ageSeconds);
  new Gauge({
    name: metricNames.logPinnedSeq, help: 'Seq of the oldest message still queued, labelled with the destination holding it (no series when nothing is queued)',
    labelNames: ['destination_type', 'destination'] as const, registers,
    collect() {
      this.reset();
      const pin = report();
      if (pin !== undefined) this.set({ destination_type: pin.destinationType, destination: pin.destination }, pin.seq);
    },
  });
}

function readTimestamp(broker: Broker, lsn: number): number | undefined {
  try {
    return broker.log.readRecord(lsn).timestamp;
  } catch (error) {
    if (error instanceof AssertionError) throw error;
    // Not readable (removed, or a damaged record): the age is unknown, not an error of the scrape.
    return undefined;
  }
}

function unrestorableCount(ranges: readonly LsnRange[]): number {
  return ranges.reduce((sum, r) => sum + (Number.isFinite(r.lastLsn) ? r.lastLsn - r.firstLsn + 1 : 0), 0);
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
      for (const session of broker.sessions.values()) inflight += session.unacked.size;
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

function registerConnectionGauges(registers: Registry[], broker: Broker, source: ConnectionSource, totals: () => QueueTotals): void {
  /** One description of the connections per scrape, shared by the gauges below. */
  let described: { at: number; channels: number; channelConsumers: number; channelUnacked: number; connections: number } | undefined;
  const connectionFigures = (): NonNullable<typeof described> => {
    const now = Date.now();
    if (described !== undefined && described.at === now) return described;
    const figures = { at: now, channels: 0, channelConsumers: 0, channelUnacked: 0, connections: 0 };
    if (source.clients === undefined) figures.connections = source.openConnections();
    for (const client of source.clients?.() ?? []) {
      const connection = client.describe();
      figures.connections++;
      for (const channel of connection.channels) {
        figures.channels++;
        figures.channelConsumers += channel.consumers.length;
        figures.channelUnacked += channel.unacknowledged;
      }
    }
    return (described = figures);
  };
  const gauge = (name: string, help: string, read: () => number): void => {
    new Gauge({ name, help, registers, collect() { this.set(read()); } });
  };
  gauge(metricNames.connections, 'Connections currently open (AMQP and MQTT)', () => connectionFigures().connections);
  gauge(metricNames.channels, 'Channels currently open', () => connectionFigures().channels);
  gauge(metricNames.channelConsumers, 'Consumers on channels, summed over channels', () => connectionFigures().channelConsumers);
  gauge(metricNames.channelMessagesUnacked, 'Delivered but not yet acknowledged messages, summed over channels', () => connectionFigures().channelUnacked);
  gauge(metricNames.consumers, 'Consumers currently connected', () => totals().consumers);
  gauge(metricNames.queues, 'Queues available', () => broker.queues.size);
  new Gauge({
    name: metricNames.globalConsumers, help: 'Current number of consumers', labelNames: ['protocol'] as const, registers,
    collect() { this.set({ protocol: 'amqp091' }, totals().consumers); },
  });
}

function registerQueueGauges(registries: MetricsRegistries, totals: () => QueueTotals): void {
  for (const [name, help, field] of queueFamilies) {
    new Gauge({ name, help, registers: [registries.aggregated], collect() { this.set(totals()[field]); } });
  }
}
