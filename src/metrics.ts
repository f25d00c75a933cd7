/**
 * Prometheus metrics, on registries of Cairn's own (never prom-client's global
 * one, so two brokers in one process — tests, embedding — never share series).
 *
 * Names: what RabbitMQ also has carries the name and labels of RabbitMQ's
 * prometheus plugin (rabbitmq_queue_messages_ready, rabbitmq_connections,
 * rabbitmq_global_messages_received_total{protocol}, rabbitmq_identity_info,
 * ...), so its Grafana dashboards work; what only Cairn has is cairn_* (the
 * log's position, fsync latency, group-commit batch sizes, snapshots, replay,
 * MQTT sessions, collections, drops at a bound). prom-client's default
 * process_* and nodejs_* metrics come along (read at most once a second;
 * metrics-process.ts).
 *
 * Two expositions, as RabbitMQ serves them:
 * - /metrics: object metrics aggregated (rabbitmq_queue_messages_ready is one
 *   unlabelled sum over all queues).
 * - /metrics/per-object: the same families, object metrics one series per
 *   object ({vhost, queue}).
 * No family ever mixes a total series with per-object series, so sum() over
 * any family of either exposition counts everything once.
 *
 * Two kinds of series:
 * - Events the hot paths report through cheap methods (`messageIn`,
 *   `messageOut`, `fsync`, `drop`, `connectionOpened`/`Closed`): a counter or
 *   histogram child per label value is resolved once, here, so a call costs an
 *   addition, never a label lookup. The per-message and per-sync counts are
 *   plain numbers, copied into their counters when scraped (`collect`): a
 *   prom-client inc() hashes its labels and checks its value on every call.
 * - State computed only when scraped (`collectFrom`, metrics-gauges.ts).
 */
import { Counter, Gauge, Histogram, Registry, type Counter as CounterType } from 'prom-client';
import { assert } from './assert.js';
import type { Broker } from './core/broker.js';
import { metricNames } from './metric-names.js';
import { registerBrokerGauges } from './metrics-gauges.js';
import { registerProcessMetrics } from './metrics-process.js';
import { AnswerBytes } from './http/answer-bytes.js';
import { renderInSlices, SliceClock, sliceMs } from './http/answer-slices.js';
import { KeptFamilies, perQueueExpositionSlices, readQueueFigures } from './metrics-per-queue.js';
import type { ManagedConnection } from './protocols/connection-description.js';
import { version } from './version.js';

export type MetricsProtocol = 'mqtt' | 'amqp';
export type DropDestination = 'session' | 'queue';
export const metricsProtocols: readonly MetricsProtocol[] = ['mqtt', 'amqp'];
/** RabbitMQ's protocol label values (3.13 names MQTT 3.1.1 `mqtt311`). */
export const rabbitProtocolLabels: Readonly<Record<MetricsProtocol, string>> = { amqp: 'amqp091', mqtt: 'mqtt311' };

export { metricNames } from './metric-names.js';

/** What an ACL refusal was: an MQTT publish (dropped), subscribe (0x80) or delivery (not sent); an AMQP operation (403). */
export type AccessDeniedAction = 'publish' | 'subscribe' | 'read' | 'amqp';

/** Plain totals, for rates in the HTTP overview without parsing the registry. */
export interface MetricsTotals {
  readonly messagesIn: Readonly<Record<MetricsProtocol, number>>;
  readonly messagesOut: Readonly<Record<MetricsProtocol, number>>;
  readonly fsyncs: number;
  readonly connectionsOpened: Readonly<Record<MetricsProtocol, number>>;
}

/** At scrape time: the counter's series are the plain totals, one per protocol, in metricsProtocols' order. */
function copyProtocolTotals(counter: CounterType<'protocol'>, totals: Readonly<Record<MetricsProtocol, number>>): void {
  counter.reset();
  for (const protocol of metricsProtocols) counter.inc({ protocol: rabbitProtocolLabels[protocol] }, totals[protocol]);
}

/**
 * prom-client's process and Node.js metrics are read at most this often: both expositions show them, a scrape round
 * asks for both at once, and reading them (memory, CPU, open descriptors, event-loop delay percentiles) is the
 * costly part of /metrics. A Prometheus scrapes every 15 s or so; a second's age is below what it can see.
 */
export const processMetricsReuseMs = 1_000;

/**
 * registry.metrics()'s text, family by family, with a turn of the event loop whenever a slice has held it for
 * `budgetMs` (answer-slices.ts): reading prom-client's process and Node.js metrics (memory, heap spaces, /proc, open
 * descriptors), or formatting Cairn's ~40 families, held the loop for about a millisecond in one go. Each family is
 * read at one moment; two families may be a turn apart.
 */
export async function textInSlices(registry: Registry, budgetMs = sliceMs): Promise<string> {
  const texts: string[] = [];
  const clock = new SliceClock(budgetMs);
  for (const metric of registry.getMetricsAsArray()) {
    texts.push(await registry.getSingleMetricAsString(metric.name));
    await clock.due();
  }
  return `${texts.join('\n\n')}\n`;
}

export class Metrics {
  /** prom-client's default process_* and nodejs_* metrics (both expositions, read through processMetricsText). */
  private readonly process = new Registry();
  private processText: { readonly at: number; readonly text: Promise<string> } | undefined = undefined;
  /** Families both expositions show: events and Cairn's gauges. */
  private readonly shared = new Registry();
  /** Object metrics summed over objects (/metrics). */
  private readonly aggregatedObjects = new Registry();
  private readonly inTotals: Record<MetricsProtocol, number> = { mqtt: 0, amqp: 0 };
  private readonly outTotals: Record<MetricsProtocol, number> = { mqtt: 0, amqp: 0 };
  private fsyncTotal = 0;
  private readonly fsyncSeconds: Histogram;
  private readonly batchRecords: Histogram;
  private readonly snapshotSeconds: Histogram;
  private readonly drops: Counter<'destination'>;
  private readonly connectionsOpened: Counter;
  private readonly connectionsClosed: Counter;
  private readonly accessDenials: Counter<'action'>;
  private readonly connectionCounts: Record<MetricsProtocol, number> = { mqtt: 0, amqp: 0 };
  private readonly openedTotals: Record<MetricsProtocol, number> = { mqtt: 0, amqp: 0 };
  private collecting: Broker | undefined = undefined;
  private aggregatedView: Registry | undefined;
  /** The last /metrics/per-object's per-queue families: unchanged ones are copied. */
  private readonly keptFamilies = new KeptFamilies();
  /** Expositions begun: figures read once per exposition are kept for the one in progress (metrics-gauges.ts). */
  private expositions = 0;

  constructor() {
    const registers = [this.shared];
    registerProcessMetrics(this.process);
    new Gauge({ name: metricNames.buildInfo, help: 'Cairn build information (always 1)', labelNames: ['version', 'node_version'] as const, registers }).set({ version, node_version: process.version }, 1);
    const inTotals = this.inTotals;
    const outTotals = this.outTotals;
    new Counter({
      name: metricNames.messagesReceived, help: 'Total number of messages received from publishers', labelNames: ['protocol'] as const, registers,
      collect() { copyProtocolTotals(this, inTotals); },
    });
    new Counter({
      name: metricNames.messagesDelivered, help: 'Total number of messages delivered to consumers and subscribers', labelNames: ['protocol'] as const, registers,
      collect() { copyProtocolTotals(this, outTotals); },
    });
    const fsyncTotal = (): number => this.fsyncTotal;
    new Counter({
      name: metricNames.fsyncs, help: 'fdatasync calls on log segments', registers,
      collect() { this.reset(); this.inc(fsyncTotal()); },
    });
    this.fsyncSeconds = new Histogram({
      name: metricNames.fsyncSeconds, help: 'Duration of one log fdatasync', registers,
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    });
    this.batchRecords = new Histogram({
      name: metricNames.batchRecords, help: 'Records made durable by one fdatasync (group commit batch size)', registers,
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096],
    });
    this.snapshotSeconds = new Histogram({
      name: metricNames.snapshotSeconds, help: 'Duration of one snapshot, from encoding the state to the renamed file', registers,
      buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    });
    this.drops = new Counter({ name: metricNames.drops, help: 'Messages dropped because a session or queue was at its bound', labelNames: ['destination'] as const, registers });
    this.connectionsOpened = new Counter({ name: metricNames.connectionsOpened, help: 'Total number of connections opened', registers });
    this.connectionsClosed = new Counter({ name: metricNames.connectionsClosed, help: 'Total number of connections closed or terminated', registers });
    // Every series exists from the start at 0, so rate() and dashboards see it before the first event.
    for (const destination of ['session', 'queue'] as const) this.drops.inc({ destination }, 0);
    this.accessDenials = new Counter({ name: metricNames.accessDenied, help: 'Operations refused by the topic ACL (MQTT publish dropped, subscribe 0x80, delivery withheld) or AMQP permissions (403)', labelNames: ['action'] as const, registers });
    for (const action of ['publish', 'subscribe', 'read', 'amqp'] as const) this.accessDenials.inc({ action }, 0);
  }

  /** A PUBLISH (MQTT) or basic.publish (AMQP) accepted by the core. Call once per message, in the protocol's publish handler. */
  messageIn(protocol: MetricsProtocol): void {
    this.inTotals[protocol]++;
  }

  /** A message written to a client (PUBLISH or basic.deliver / get-ok). Call where the link sends it. */
  messageOut(protocol: MetricsProtocol): void {
    this.outTotals[protocol]++;
  }

  /** One fdatasync finished: how long it took and how many records it made durable. Call from the log's group commit. */
  fsync(seconds: number, records: number): void {
    this.fsyncTotal++;
    this.fsyncSeconds.observe(seconds);
    this.batchRecords.observe(records);
  }

  /** A snapshot was written (BrokerObserver). */
  snapshotWritten(seconds: number): void {
    this.snapshotSeconds.observe(seconds);
  }

  /** Messages dropped at a session's or queue's bound. */
  drop(destination: DropDestination, count = 1): void {
    this.drops.inc({ destination }, count);
  }

  /** An operation refused by the ACL or the AMQP permissions. */
  accessDenied(action: AccessDeniedAction): void {
    this.accessDenials.inc({ action });
  }

  connectionOpened(protocol: MetricsProtocol): void {
    this.connectionCounts[protocol]++;
    this.openedTotals[protocol]++;
    this.connectionsOpened.inc();
  }

  connectionClosed(protocol: MetricsProtocol): void {
    this.connectionCounts[protocol] = Math.max(0, this.connectionCounts[protocol] - 1);
    this.connectionsClosed.inc();
  }

  /** Open connections per protocol as reported through connectionOpened/Closed. */
  connectionCount(): Readonly<Record<MetricsProtocol, number>> {
    return { ...this.connectionCounts };
  }

  totals(): MetricsTotals {
    return { messagesIn: { ...this.inTotals }, messagesOut: { ...this.outTotals }, fsyncs: this.fsyncTotal, connectionsOpened: { ...this.openedTotals } };
  }

  /**
   * Register the gauges computed from the broker (and its live connections) at
   * scrape time. Idempotent for one broker; one set of registries describes one broker.
   */
  collectFrom(broker: Broker, clients?: () => Iterable<ManagedConnection>): void {
    if (this.collecting === broker) return;
    assert(this.collecting === undefined, 'Metrics.collectFrom: these registries already describe another broker');
    this.collecting = broker;
    const openConnections = (): number => this.connectionCounts.mqtt + this.connectionCounts.amqp;
    registerBrokerGauges({ shared: this.shared, aggregated: this.aggregatedObjects }, broker, { openConnections, ...(clients ? { clients } : {}) }, () => this.expositions);
  }

  /** The /metrics exposition (object metrics aggregated). */
  async text(): Promise<string> {
    this.aggregatedView ??= Registry.merge([this.shared, this.aggregatedObjects]);
    this.expositions++;
    const [processText, rest] = await Promise.all([this.processMetricsText(), textInSlices(this.aggregatedView)]);
    return `${processText}${rest}`;
  }

  /**
   * The /metrics/per-object exposition (one series per queue; none before collectFrom), written into `out`: the
   * per-queue series in slices of `budgetMs` with turns of the event loop between them, from the queues' figures read
   * at one moment, before the first turn.
   */
  async writePerObject(out: AnswerBytes, budgetMs = sliceMs): Promise<void> {
    this.expositions++;
    const queues = this.collecting === undefined ? undefined : readQueueFigures(this.collecting);
    const [processText, shared] = await Promise.all([this.processMetricsText(), textInSlices(this.shared, budgetMs)]);
    out.utf8(processText).utf8(shared);
    if (queues !== undefined) await renderInSlices(perQueueExpositionSlices(queues, out, this.keptFamilies), budgetMs);
  }

  /** The same as text (tests). */
  async perObjectText(budgetMs = sliceMs): Promise<string> {
    const out = new AnswerBytes(Buffer.alloc(1024));
    await this.writePerObject(out, budgetMs);
    return out.view().toString('utf8');
  }

  private processMetricsText(): Promise<string> {
    const now = performance.now();
    if (this.processText === undefined || now - this.processText.at >= processMetricsReuseMs) this.processText = { at: now, text: textInSlices(this.process) };
    return this.processText.text;
  }

  get contentType(): string {
    return this.shared.contentType;
  }
}
