/**
 * Which Cairn node writes a JetStream log: the holder of the key `writer` in
 * the KV bucket `<stream>-writer`. The key is taken with create (it must not
 * exist: compare-and-set against "absent") and kept alive by updates that
 * name the revision this holder last wrote (compare-and-set again), every
 * third of the TTL. The bucket's max age is the TTL, so the key of a holder
 * that stopped renewing (dead, paused, cut off) vanishes after it, and
 * another node's create succeeds.
 *
 * The lease only says who should write; the stream enforces it. A new holder
 * publishes a fence before its first append (jetstream-log.ts), and every
 * append names the sequence it must follow, so a holder that lost the lease
 * without knowing it (paused past its TTL) has its next append refused. The
 * lease's own loss (an update refused, or no successful renewal within the
 * TTL) is reported through `onLost`: the node stops writing at once.
 */
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { assert } from '../../assert.js';
import { silentLogger, type Logger } from '../../logger.js';
import { leaseTtlMsDefault, leaseTtlMsMin } from './lease-limits.js';

const leaseKey = 'writer';
export { leaseTtlMsDefault, leaseTtlMsMin } from './lease-limits.js';

export interface WriterLeaseOptions {
  readonly connection: NatsConnection;
  readonly stream: string;
  /** Names this node in the key's value (shown to the nodes waiting for it). */
  readonly holder: string;
  /** The bucket's max age, set when the bucket is created: an existing bucket keeps its own. Default 5 s. */
  readonly ttlMs?: number;
  readonly replicas?: number;
  readonly logger?: Logger;
  /** Told once when this node no longer holds the lease (or cannot know that it does). */
  readonly onLost?: (reason: string) => void;
}

export class WriterLease {
  private timer: NodeJS.Timeout | undefined = undefined;
  private renewedAt: number;
  private lost = false;
  private renewing = false;

  private constructor(
    private readonly kv: KV,
    private revision: number,
    private readonly options: WriterLeaseOptions,
    private readonly ttlMs: number,
  ) {
    this.renewedAt = performance.now();
    this.timer = setInterval(() => void this.renew(), Math.max(100, Math.floor(ttlMs / 3)));
    this.timer.unref();
  }

  /** Takes the lease if nobody holds it; undefined (and the current holder's name) when someone does. */
  static async tryAcquire(options: WriterLeaseOptions): Promise<WriterLease | { heldBy: string }> {
    const ttlMs = options.ttlMs ?? leaseTtlMsDefault;
    assert(ttlMs >= leaseTtlMsMin, `a writer lease lasts at least ${leaseTtlMsMin} ms`);
    const kv = await new Kvm(options.connection).create(`${options.stream}-writer`, { history: 1, ttl: ttlMs, replicas: options.replicas ?? 3 });
    for (let attempt = 1; ; attempt++) {
      try {
        const revision = await kv.create(leaseKey, options.holder);
        (options.logger ?? silentLogger()).info({ stream: options.stream, holder: options.holder, revision, ttlMs }, 'took the writer lease');
        return new WriterLease(kv, revision, options, ttlMs);
      } catch (error) {
        if (!isWrongLastSequence(error)) throw error;
        const entry = await kv.get(leaseKey);
        if (entry !== null && entry.operation === 'PUT') return { heldBy: entry.string() };
        // Released or expired: create() takes a deleted key, unless its own read of the key came from a replica
        // that had not seen the delete yet (seen once on a loaded machine): try again.
        if (attempt === releasedKeyAttempts) return { heldBy: 'nobody (it was just released or expired)' };
        await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
      }
    }
  }

  /** Waits until the lease is free and takes it, polling every quarter TTL; `onWaiting` hears who holds it. */
  static async acquire(options: WriterLeaseOptions & { onWaiting?: (heldBy: string) => void; signal?: AbortSignal }): Promise<WriterLease> {
    const pollMs = Math.max(50, Math.floor((options.ttlMs ?? leaseTtlMsDefault) / 4));
    for (;;) {
      options.signal?.throwIfAborted();
      const attempt = await WriterLease.tryAcquire(options);
      if (attempt instanceof WriterLease) return attempt;
      options.onWaiting?.(attempt.heldBy);
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  }

  /** Stops renewing and deletes the key (if still this holder's), so a standby takes over without waiting for the TTL. */
  async release(): Promise<void> {
    this.stop();
    if (this.lost) return;
    this.lost = true;
    await this.kv.delete(leaseKey, { previousSeq: this.revision }).catch(() => undefined);
  }

  /** Stops renewing without deleting the key (a node that stops writing for another reason; tests). */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One renewal (the timer's; a test calls it for a holder that resumes after a pause). */
  async renew(): Promise<void> {
    if (this.renewing || this.lost) return;
    this.renewing = true;
    try {
      this.revision = await this.kv.update(leaseKey, this.options.holder, this.revision);
      this.renewedAt = performance.now();
    } catch (error) {
      if (isWrongLastSequence(error)) this.lose(`another node took the writer lease of stream ${this.options.stream}`);
      else if (performance.now() - this.renewedAt > this.ttlMs) this.lose(`the writer lease could not be renewed within its TTL (${this.ttlMs} ms): ${String(error)}`);
    } finally {
      this.renewing = false;
    }
  }

  private lose(reason: string): void {
    if (this.lost) return;
    this.lost = true;
    this.stop();
    (this.options.logger ?? silentLogger()).error({ stream: this.options.stream, holder: this.options.holder }, `lost the writer lease: ${reason}`);
    this.options.onLost?.(reason);
  }
}

/** Attempts to take a lease whose key was deleted (released) or expired before saying nobody holds it. */
const releasedKeyAttempts = 4;

function isWrongLastSequence(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence;
}
