/**
 * The broker core: the durable state (a fold of the log), the runtime around
 * it (connected sessions, queues with consumers, routing indexes), and the
 * MQTT and AMQP command sets the protocol front ends call.
 *
 * Start-up: load the newest snapshot, replay the records after it, then
 * rebuild the runtime from the state (persistent sessions offline, durable
 * queues with their messages ready, durable bindings) and report what was
 * recovered. From then on every durable change goes through the Committer,
 * which appends and applies in one step, so live state == replayed state.
 */
import { decode, Encoder } from '@msgpack/msgpack';
import { apply } from '../projections/apply.js';
import { decodeState, encodeState, type EncodedState } from '../projections/snapshot-codec.js';
import { oldestLiveMessage } from '../projections/pins.js';
import { initialState, type BrokerState, type StoredMessage } from '../projections/state.js';
import { silentLogger, type Logger } from '../logger.js';
import { Busy, noteBusy } from '../stage-timing.js';
import type { AmqpCore, MqttCore, Qos } from './api.js';
import { AmqpCoreImpl } from './amqp-core.js';
import { bindingArgumentsOf, builtInExchanges, defaultExchange, exchangeDestination, ExchangeRuntime, queueDestination } from './amqp-exchange.js';
import { routeThroughExchanges } from './exchange-routing.js';
import { decodeFieldTable } from '../protocols/amqp/codec/index.js';
import { QueueRuntime } from './amqp-queue.js';
import { MessageStore } from './message-store.js';
import { relocationRecords, type Releasable } from './segment-release.js';
import { Committer, record } from './committer.js';
import { TransientCommitter } from './transient-committer.js';
import { GroupedReplay } from '../projections/transaction-groups.js';
import type { IngestRoute } from './ingest.js';
import { checkCoreLimits, defaultCoreLimits, type CoreLimits } from './limits.js';
import { MqttCoreImpl } from './mqtt-core.js';
import { SessionDelivery, SessionRuntime, swapSeparators } from './mqtt-sessions.js';
import { silentObserver, type BrokerObserver } from './observer.js';
import type { RecordLog } from './record-log.js';
import { parseSharedFilter, SharedSubscriptions } from './shared-subscription.js';
import { isSharedFilter } from '../projections/shared-groups.js';
import { SubscriptionIndex } from './subscription-index.js';
import { systemTimers, type Timers } from './timers.js';
import type { BrokerRecord } from '../projections/records.js';

/** bridgeQueues' answer while nothing is bound to amq.topic (nearly every MQTT publish): one array, never written to. */
const noQueues: readonly QueueRuntime[] = [];

/** What the broker needs from the log beyond appending: replay and snapshots. */
export interface BrokerLog extends RecordLog {
  read(from?: { lsn?: number }): Iterable<BrokerRecord>;
  /** One record by LSN, synchronously (positioned read): how a queued message's payload comes back for delivery. */
  readRecord(lsn: number): BrokerRecord;
  loadSnapshot?(): { lsn: number; data: Uint8Array } | undefined;
  writeSnapshot?(lsn: number, data: Uint8Array): Promise<void>;
  /** Retires old segments and snapshots; never a segment holding `keepFromLsn` or a later LSN (a live message). */
  applyRetention?(pin?: { keepFromLsn?: number | undefined }): Promise<unknown>;
  /** What retention would remove if nothing were queued (segment-release.ts). */
  releasable?(): Releasable | undefined;
}

export interface BrokerOptions {
  readonly log: BrokerLog;
  readonly limits?: Partial<CoreLimits>;
  readonly ingestRoutes?: readonly IngestRoute[];
  readonly clock?: () => number;
  /** Timers on the same clock (message TTL, x-expires); tests pass a manual clock's. */
  readonly timers?: Timers;
  readonly logger?: Logger;
  /** Told about messages in and out and drops (metrics). */
  readonly observer?: BrokerObserver;
  /** What a warm standby built from the log while it waited (standby-tail.ts): its replay continues from `nextLsn`. */
  readonly warm?: { readonly state: BrokerState; readonly replay: GroupedReplay; readonly nextLsn: number; readonly snapshotLsn: number };
}

export interface RecoveryReport {
  readonly snapshotLsn: number;
  readonly recordsReplayed: number;
  readonly replayMs: number;
  readonly sessions: number;
  readonly pendingMessages: number;
  readonly durableQueues: number;
  readonly queuedMessages: number;
}

export class Broker {
  readonly mqtt: MqttCoreImpl;
  readonly amqp: AmqpCore;
  private readonly amqpCore: AmqpCoreImpl;
  readonly committer: Committer;
  readonly sessions = new Map<string, SessionRuntime>();
  readonly subscriptions = new SubscriptionIndex<SessionRuntime>();
  readonly exchanges = new Map<string, ExchangeRuntime>();
  readonly queues = new Map<string, QueueRuntime>();
  /** $SYS retained values (MqttCore.publishSystem): this process's figures, never recorded. */
  readonly systemRetained = new Map<string, StoredMessage>();
  readonly limits: CoreLimits;
  /** Where queued messages' bodies come from on delivery: the recent-message cache, else the log. */
  readonly store: MessageStore;
  /** MQTT shared-subscription groups at run time. */
  readonly shared: SharedSubscriptions;
  readonly ingestRoutes: readonly IngestRoute[];
  recovery: RecoveryReport | undefined = undefined;
  private readonly documentIds = new Map<string, number>();
  private snapshotting = false;

  private constructor(
    readonly log: BrokerLog,
    readonly state: BrokerState,
    private readonly options: BrokerOptions,
    readonly logger: Logger,
  ) {
    this.limits = { ...defaultCoreLimits, ...options.limits };
    checkCoreLimits(this.limits);
    this.ingestRoutes = options.ingestRoutes ?? [];
    const clock = options.clock ?? Date.now;
    this.committer = new Committer(log, state, clock, logger);
    this.committer.onCommitted = () => this.maybeSnapshot();
    const observer = options.observer ?? silentObserver;
    const store = new MessageStore(log, this.limits.messageCacheBytes);
    this.store = store;
    const delivery = new SessionDelivery(this.limits, observer, store, clock);
    const transient = new TransientCommitter(clock);
    const shared = new SharedSubscriptions({ state, committer: this.committer, limits: this.limits, observer, store, delivery });
    this.shared = shared;
    const amqp: AmqpCoreImpl = new AmqpCoreImpl({
      committer: this.committer, transient, limits: this.limits, delivery, observer, store, state, shared, exchanges: this.exchanges, queues: this.queues,
      timers: options.timers ?? systemTimers,
      dispatch: (queue) => amqp.dispatchQueue(queue),
      overflowed: (queue, entries) => amqp.deadLetterOverflow(queue, entries),
      bridgeSessions: (topic) => this.subscriptions.match(topic),
    });
    this.amqp = amqp;
    this.amqpCore = amqp;
    this.mqtt = new MqttCoreImpl({
      committer: this.committer, transient, limits: this.limits, delivery, observer, store, state, shared, sessions: this.sessions, subscriptions: this.subscriptions,
      ingestRoutes: this.ingestRoutes, clock, timers: options.timers ?? systemTimers, systemRetained: this.systemRetained,
      dispatch: (queue) => amqp.dispatchQueue(queue),
      overflowed: (queue, entries) => amqp.deadLetterOverflow(queue, entries),
      bridgeQueues: (topic) => this.bridgeQueues(topic),
      watchExpiry: (queue) => amqp.watchExpiry(queue),
      nextDocumentId: (collection) => this.nextDocumentId(collection),
    });
  }

  static open(options: BrokerOptions): Broker {
    const logger = options.logger ?? silentLogger();
    const started = performance.now();
    const snapshot = options.warm === undefined ? options.log.loadSnapshot?.() : undefined;
    const state = options.warm?.state ?? (snapshot ? decodeState(decode(snapshot.data) as EncodedState) : initialState());
    let recordsReplayed = 0;
    const replay = options.warm?.replay ?? new GroupedReplay(state);
    for (const logRecord of options.log.read({ lsn: options.warm?.nextLsn ?? state.lastLsn + 1 })) {
      replay.feed(logRecord);
      recordsReplayed++;
    }
    compactPayloads(state);
    const broker = new Broker(options.log, state, options, logger);
    const torn = replay.torn;
    if (torn !== undefined) broker.abortTornGroup(torn);
    broker.rebuildRuntime();
    broker.amqpCore.recovered();
    broker.recovery = broker.report(options.warm?.snapshotLsn ?? snapshot?.lsn ?? 0, recordsReplayed, performance.now() - started);
    return broker;
  }

  /**
   * Replay ended inside a transaction group whose commit never reached the log (a crash cut it): its records were
   * not applied. The abort record, before any other, closes the group for every later replay (transaction-groups.ts).
   */
  private abortTornGroup(torn: { readonly beginLsn: number; readonly records: number }): void {
    this.logger.warn({ beginLsn: torn.beginLsn, records: torn.records }, 'a transaction cut short by a crash was not applied (no commit record): its records are ignored and an abort record closes it');
    this.committer.commitQuietly([record('tx', { op: 'abort', begin: torn.beginLsn })]);
  }

  /** The runtime of a freshly replayed state: built-in exchanges, durable topology, offline persistent sessions. */
  private rebuildRuntime(): void {
    const builtIn = { durable: true, autoDelete: false, builtIn: true };
    this.exchanges.set(defaultExchange, new ExchangeRuntime(defaultExchange, 'direct', builtIn));
    for (const [name, type] of builtInExchanges) this.exchanges.set(name, new ExchangeRuntime(name, type, builtIn));
    for (const exchange of this.state.exchanges.values()) {
      this.exchanges.set(exchange.name, new ExchangeRuntime(exchange.name, exchange.type, {
        durable: true, autoDelete: exchange.autoDelete, builtIn: false, internal: exchange.internal === true, alternateExchange: exchange.alternateExchange,
      }));
    }
    for (const queueState of this.state.queues.values()) {
      const queue = new QueueRuntime(queueState.name, true, queueState.autoDelete, undefined, queueState, queueState.arguments);
      this.queues.set(queue.name, queue);
      this.exchanges.get(defaultExchange)!.bind(queueDestination(queue.name), queue.name);
    }
    for (const binding of this.state.bindings.values()) {
      const destination = binding.toExchange === undefined ? queueDestination(binding.queue ?? '') : exchangeDestination(binding.toExchange);
      const args = binding.arguments === undefined ? undefined : bindingArgumentsOf(decodeFieldTable(Buffer.from(binding.arguments)));
      this.exchanges.get(binding.exchange)?.bind(destination, binding.routingKey, args);
    }
    this.shared.recover();
    for (const sessionState of this.state.sessions.values()) {
      const session = new SessionRuntime(sessionState.clientId, this.committer, sessionState);
      this.sessions.set(session.clientId, session);
      for (const [filter, qos] of sessionState.subscriptions) {
        const shared = isSharedFilter(filter) ? parseSharedFilter(filter) : undefined;
        if (shared === undefined) this.subscriptions.add(filter, session, qos, sessionState.subscriptionOptions.get(filter)?.noLocal === true);
        else if (!('problem' in shared)) this.shared.join(session, shared, qos);
      }
    }
  }

  private report(snapshotLsn: number, recordsReplayed: number, replayMs: number): RecoveryReport {
    let pendingMessages = 0;
    for (const session of this.state.sessions.values()) pendingMessages += session.pending.size;
    let queuedMessages = 0;
    for (const queue of this.state.queues.values()) queuedMessages += queue.pending.size;
    return { snapshotLsn, recordsReplayed, replayMs, sessions: this.state.sessions.size, pendingMessages, durableQueues: this.state.queues.size, queuedMessages };
  }

  /** `topic` is an MQTT topic: its routing key (separators swapped) is made only when amq.topic has a binding. */
  private bridgeQueues(topic: string): readonly QueueRuntime[] {
    const exchange = this.exchanges.get('amq.topic');
    if (!exchange || exchange.bindingCount === 0) return noQueues;
    const queues: QueueRuntime[] = [];
    // An MQTT publish carries no AMQP headers: a headers exchange downstream sees none.
    for (const name of routeThroughExchanges(this.exchanges, exchange, swapSeparators(topic), undefined).queues) {
      const queue = this.queues.get(name);
      if (queue) queues.push(queue);
    }
    return queues;
  }

  private nextDocumentId(collection: string): number {
    const id = this.documentIds.get(collection) ?? this.state.collections.get(collection)?.nextId ?? 1;
    this.documentIds.set(collection, id + 1);
    return id;
  }

  /** The message a queued entry refers to (held, cached or read from the log), for tools and tests. */
  messageOf(entry: { readonly lsn: number; readonly held: StoredMessage | undefined }): StoredMessage {
    return entry.held ?? this.store.read(entry.lsn);
  }

  /** MQTT subscribers of a topic, for tools and tests. */
  subscribersOf(topic: string): ReadonlyMap<SessionRuntime, Qos> {
    return this.subscriptions.match(topic);
  }

  /** Snapshot the state as of now, once everything up to it is durable; then let retention drop old segments. */
  async snapshot(): Promise<number | undefined> {
    const { writeSnapshot } = this.log;
    if (!writeSnapshot || this.snapshotting || this.state.lastLsn === 0) return undefined;
    this.snapshotting = true;
    const started = performance.now();
    try {
      if (this.limits.releaseSegments) await this.releaseSegments();
      this.committer.flushSettled();
      const lsn = this.state.lastLsn;
      // Sized up front and not copied out (an encoder of its own): grown by doubling and then copied,
      // a large snapshot left three times its size behind as garbage (RSS after a 1M-message fill).
      const data = new Encoder({ initialBufferSize: snapshotBytesEstimate(this.state) }).encodeSharedRef(encodeState(this.state, 'views'));
      // The pin comes from the snapshotted state, not a later one: an ack after it may not be durable yet.
      const keepFromLsn = oldestLiveMessage(this.state)?.lsn;
      this.committer.recordsSinceSnapshot = 0;
      await this.committer.settled();
      if (this.log.failed) return undefined;
      await writeSnapshot.call(this.log, lsn, data);
      this.options.observer?.snapshotWritten?.((performance.now() - started) / 1000);
      await this.log.applyRetention?.call(this.log, { keepFromLsn });
      this.logger.info({ lsn, bytes: data.byteLength }, 'snapshot written');
      return lsn;
    } finally {
      noteBusy(Busy.snapshot, started, performance.now());
      this.snapshotting = false;
    }
  }

  /**
   * Moves the few live messages and documents out of segments that retention could otherwise remove
   * (segment-release.ts), durably, before the snapshot: the snapshot then holds the new references and
   * the retention after it removes the old segments.
   */
  private async releaseSegments(): Promise<void> {
    const releasable = this.log.releasable?.();
    if (releasable === undefined || this.log.failed) return;
    const oldest = oldestLiveMessage(this.state);
    if (oldest === undefined || oldest.lsn >= releasable.beforeLsn) return;
    let records;
    try {
      records = relocationRecords(this.state, releasable, (lsn) => this.log.readRecord(lsn));
    } catch (error) {
      // A damaged record stays where it is (and keeps its segment); its consumer meets the error on delivery.
      this.logger.warn({ err: error }, 'old segments not released: a live record in them could not be read');
      return;
    }
    if (records.length === 0) return;
    await this.committer.commit(records);
    this.logger.info({ records: records.length, beforeLsn: releasable.beforeLsn, bytes: releasable.bytes }, 'live messages moved out of old segments so that retention can release them');
  }

  private maybeSnapshot(): void {
    const every = this.limits.snapshotEveryRecords;
    if (every > 0 && this.committer.recordsSinceSnapshot >= every && !this.snapshotting) {
      this.snapshot().catch((error: unknown) => this.logger.error({ err: error }, 'snapshot failed; will retry after more records'));
    }
  }

  /** Wait until everything committed so far is durable. */
  async flush(): Promise<void> {
    await this.committer.settled();
  }
}

/** Roughly the encoded size of a snapshot: a few bytes per queued entry (packed columns) and per document reference (deltas), room for the rest. */
function snapshotBytesEstimate(state: BrokerState): number {
  let entries = 0;
  for (const session of state.sessions.values()) entries += session.pending.size;
  for (const queue of state.queues.values()) entries += queue.pending.size;
  for (const group of state.groups.values()) entries += group.pending.size;
  let documents = 0;
  for (const collection of state.collections.values()) documents += collection.documents.size;
  return 256 * 1024 + entries * 4 + documents * 4;
}

/**
 * Replay decodes payloads into shared pools (fast, few allocations); a payload
 * that outlives replay would pin its whole pool, so the survivors — the
 * retained values (queued messages are references, not payloads) — get
 * buffers of their own.
 */
function compactPayloads(state: BrokerState): void {
  const own = (bytes: Uint8Array): Uint8Array => (bytes.byteLength < bytes.buffer.byteLength ? bytes.slice() : bytes);
  for (const [topic, value] of state.retained) state.retained.set(topic, { ...value, payload: own(value.payload) });
}
