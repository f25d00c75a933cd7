/**
 * The one place where records are born: stamp them with the clock, append them
 * to the log (which assigns LSNs synchronously, in call order), and apply them
 * to the live state under the same LSNs — so live state is always the fold of
 * the log, in the log's order.
 *
 * `commit` returns the durability promise for acks; `commitQuietly` is for
 * records nobody waits for (consumer acks, deliveries): appended lazy (their
 * fdatasync may wait for the next one, see group-commit.ts), their failure
 * logged once and otherwise only mattering because the log refuses all
 * further appends. `settleLater` coalesces acks and deliveries made in one tick into
 * one record per destination.
 *
 * `commitDeferred` lets the publishes of one socket read share one append:
 * their records wait until the end of the tick and are then appended and
 * applied together (LSNs still assigned in call order, apply right after the
 * append). Any other commit, settled record or `settled()` appends the
 * waiting records first, so the log keeps the order in which records were
 * made, and a deliver or ack record always follows its msg record.
 *
 * `beginGroup` / `endGroup` make an atomic group of everything committed
 * between them (an AMQP transaction, transaction-groups.ts): a tx begin record
 * before the group's first record, every record made meanwhile appended at
 * once (deferred commits too, and the acks and deliveries settled in the
 * group), then a tx commit record. The caller runs the group in one
 * synchronous stretch, so no other record comes between; snapshots wait for
 * the group's end (a snapshot inside a group would hold half of it).
 */
import { assert } from '../assert.js';
import { queueMicrotaskPlain } from '../microtask.js';
import { apply } from '../projections/apply.js';
import { RecordKind, type BodyOf, type BrokerRecord, type DestinationRef, type RecordKindName } from '../projections/records.js';
import type { BrokerState } from '../projections/state.js';
import type { Logger } from '../logger.js';
import type { RecordLog } from './record-log.js';

export interface PendingRecord {
  readonly kind: number;
  readonly body: unknown;
}

export function record<K extends RecordKindName>(kind: K, body: BodyOf[K]): PendingRecord {
  return { kind: RecordKind[kind], body };
}

const lazyAppend = { lazy: true };

export class LogFailedError extends Error {
  override readonly name = 'LogFailedError';
  readonly code = 'ELOGFAILED';
}

export type SettleKind = 'ack' | 'deliver';

const ignore = (): void => undefined;

/**
 * Where a destination's records go: the log (Committer), or nowhere for a transient destination
 * (transient-committer.ts: a clean MQTT session), applied to the state by the same fold either way.
 */
export interface DestinationCommitter {
  /** Whether the records are written to the log, and so survive a restart. */
  readonly durable: boolean;
  /** Resolves when the records are durable; undefined when they are not written (nothing to wait for). */
  commit(records: readonly PendingRecord[]): Promise<void> | undefined;
  commitQuietly(records: readonly PendingRecord[]): void;
  settleLater(kind: SettleKind, ref: DestinationRef, seq: number): void;
}

export class Committer implements DestinationCommitter {
  readonly durable = true;
  /** Coalesced acks/deliveries, keyed by kind + destination. */
  private readonly settling = new Map<string, { kind: SettleKind; ref: DestinationRef; seqs: number[] }>();
  private settleScheduled = false;
  private lastAppended: Promise<unknown> = Promise.resolve();
  private deferred: DeferredBatch | undefined = undefined;
  /** Set between beginGroup and endGroup; `begun` once the group's begin record is written. */
  private group: { begun: boolean } | undefined = undefined;
  recordsSinceSnapshot = 0;
  onCommitted: (() => void) | undefined = undefined;

  constructor(
    private readonly log: RecordLog,
    private readonly state: BrokerState,
    private readonly clock: () => number,
    private readonly logger: Logger,
  ) {}

  /** The broker's clock: what records are stamped with (message TTLs count from it). */
  now(): number {
    return this.clock();
  }

  get failed(): Error | undefined {
    return this.log.failed;
  }

  /** The LSN the next committed record gets: deferred records go first, whatever the next commit is. */
  get nextLsn(): number {
    return this.log.nextLsn + (this.deferred?.records.length ?? 0) + (this.group?.begun === false ? 1 : 0);
  }

  /** Starts an atomic group (see the file's comment). Groups do not nest. */
  beginGroup(): void {
    assert(this.group === undefined, 'a transaction group began inside another');
    this.flushSettled();
    this.group = { begun: false };
  }

  /**
   * Ends the group: its settled acks and deliveries, then the commit record. Resolves when the whole group is
   * durable; undefined when the group made no record (nothing was written, not even its bounds).
   */
  endGroup(): Promise<void> | undefined {
    const group = this.group;
    assert(group !== undefined, 'endGroup without beginGroup');
    this.flushSettled();
    this.group = undefined;
    if (!group.begun) return undefined;
    return this.commit([record('tx', { op: 'commit' })]);
  }

  /** Append and apply; the promise resolves when the records are durable. */
  commit(records: readonly PendingRecord[]): Promise<void> {
    if (this.log.failed) return Promise.reject(this.failedError());
    this.flushSettled();
    const appended = this.appendAndApply(records);
    // No extra promise layer just to drop the LSNs (this runs per command): callers only wait on
    // the promise, never read its value. The no-op handler keeps a caller that does not wait from
    // turning a failed log into an unhandled rejection (the failure reaches it on its next commit).
    appended.catch(ignore);
    return appended as Promise<unknown> as Promise<void>;
  }

  /**
   * Like commit, but the records are appended at the end of this tick together with every other
   * deferred commit of the tick (one append, one promise for all of them), or earlier when any
   * other record is made. For publishes, whose callers only need the promise: the live state
   * changes when the records are applied, not now.
   */
  commitDeferred(records: readonly PendingRecord[]): Promise<void> {
    if (this.log.failed) return Promise.reject(this.failedError());
    // Inside a group nothing may wait past the commit record.
    if (this.group !== undefined) return this.commit(records);
    let batch = this.deferred;
    if (batch === undefined) {
      batch = new DeferredBatch();
      this.deferred = batch;
      queueMicrotaskPlain(this.flushDeferredTask);
    }
    for (const r of records) batch.records.push(r);
    return batch.promise;
  }

  private readonly flushDeferredTask = (): void => this.flushDeferred();

  /** Append and apply the deferred records now. */
  private flushDeferred(): void {
    const batch = this.deferred;
    if (batch === undefined) return;
    this.deferred = undefined;
    if (this.log.failed) {
      batch.reject(this.failedError());
      return;
    }
    this.appendAndApply(batch.records).then(batch.resolve, batch.reject);
  }

  /** The log assigns the LSNs synchronously, in call order; apply runs right after under the same LSNs. */
  private appendAndApply(groupRecords: readonly PendingRecord[], lazy = false): Promise<unknown> {
    let records = groupRecords;
    // The group's first record brings the begin record with it.
    if (this.group?.begun === false) {
      this.group.begun = true;
      records = [record('tx', { op: 'begin' }), ...groupRecords];
    }
    const timestamp = this.clock();
    const firstLsn = this.log.nextLsn;
    // One object per record serves both the append (kind, timestamp, body) and apply (plus its LSN).
    const stamped = new Array<BrokerRecord>(records.length);
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      stamped[i] = { lsn: firstLsn + i, timestamp, kind: r.kind, body: r.body } as BrokerRecord;
    }
    const appended = lazy ? this.log.append(stamped, lazyAppend) : this.log.append(stamped);
    for (let i = 0; i < stamped.length; i++) apply(this.state, stamped[i]!);
    this.recordsSinceSnapshot += stamped.length;
    this.lastAppended = appended;
    // Snapshots (Broker.maybeSnapshot) only between groups.
    if (this.group === undefined) this.onCommitted?.();
    return appended;
  }

  private failedError(): LogFailedError {
    return new LogFailedError(`the log has failed and refuses appends: ${this.log.failed?.message ?? 'unknown failure'}`);
  }

  commitQuietly(records: readonly PendingRecord[]): void {
    if (this.log.failed) return this.logQuietFailure(this.failedError());
    this.flushSettled();
    this.appendAndApply(records, true).catch(this.logQuietFailure);
  }

  private readonly logQuietFailure = (error: unknown): void => this.logger.error({ err: error }, 'a record nobody waits for could not be made durable');

  /** Resolves when everything committed so far is durable (or failed). */
  settled(): Promise<unknown> {
    this.flushSettled();
    // Lazy records too, now: whoever asks is waiting.
    this.log.sync().catch(ignore);
    return this.lastAppended.then(ignore, ignore);
  }

  /** Queue an ack or deliver for (destination, seq); all made in this tick become one record per destination. */
  settleLater(kind: SettleKind, ref: DestinationRef, seq: number): void {
    const key = `${kind}\u0000${'c' in ref ? `c${ref.c}` : 'q' in ref ? `q${ref.q}` : `g${ref.g}`}`;
    const pending = this.settling.get(key);
    if (pending) pending.seqs.push(seq);
    else this.settling.set(key, { kind, ref, seqs: [seq] });
    if (!this.settleScheduled) {
      this.settleScheduled = true;
      queueMicrotaskPlain(this.flushSettledTask);
    }
  }

  private readonly flushSettledTask = (): void => this.flushSettled();

  /** Write deferred records and coalesced acks/deliveries now: any record that follows must see them first. */
  flushSettled(): void {
    this.flushDeferred();
    this.settleScheduled = false;
    if (this.settling.size === 0) return;
    const records = [...this.settling.values()].map(({ kind, ref, seqs }) => ({ kind: RecordKind[kind], body: { ...ref, s: seqs } }));
    this.settling.clear();
    this.commitQuietly(records);
  }
}

/** The records of this tick's deferred commits and the one promise their callers share. */
class DeferredBatch {
  readonly records: PendingRecord[] = [];
  readonly promise: Promise<void>;
  resolve!: () => void;
  reject!: (error: unknown) => void;

  constructor() {
    this.promise = new Promise<void>((resolve, reject) => {
      this.resolve = () => resolve();
      this.reject = reject;
    });
    // Callers always wait on it (confirms); this keeps a failure from also being reported as unhandled.
    this.promise.catch(ignore);
  }
}
