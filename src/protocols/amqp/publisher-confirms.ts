/**
 * Publisher confirms for one channel in confirm mode (RabbitMQ's extension):
 * every basic.publish gets the next sequence number, and the broker answers
 * each with basic.ack once the message is durable, or basic.nack if the log
 * failed to make it so or a full queue refused it (x-overflow = reject-publish).
 *
 * Invariants:
 * - A confirm is sent only after its Durable settled (at once when there was
 *   nothing to wait for), so an ack means "fsynced for every durable queue".
 * - Confirms leave in sequence order: the confirm for N is never sent before
 *   every confirm below N. A later durable that resolves first waits.
 * - A run of ready confirms with the same outcome goes out as one frame with
 *   multiple=true; ready confirms are flushed once per tick, so a burst of
 *   publishes in one read costs one ack. One exception: a Durable that settles
 *   the last outstanding publish (a sequential publisher's, typically) is
 *   confirmed at once, `alone`: nothing else could join its frame.
 * - Consecutive publishes tracking the same Durable form one range with one
 *   handler; a range is only extended while its Durable is still pending.
 */
import type { Durable } from '../../core/api.js';

export type ConfirmOutcome = 'ack' | 'nack';

/** Consecutive sequence numbers that share one outcome. */
interface SeqRange {
  readonly first: number;
  last: number;
}

export class PublisherConfirms {
  /** The sequence number the next publish gets (spec: counting from 1 after confirm.select). */
  private nextSeq = 1;
  /** The lowest sequence number not confirmed to the client yet. */
  private nextToSend = 1;
  /** Settled but not yet sent, by first sequence number. */
  private readonly ready = new Map<number, { readonly range: SeqRange; readonly outcome: ConfirmOutcome }>();
  /**
   * The publishes of one socket read share one Durable (the core appends them together): the
   * latest one still pending and the range of sequence numbers waiting on it, so a run of
   * publishes costs one promise handler, not one each.
   */
  private lastDurable: Durable = undefined;
  private lastRange: SeqRange | undefined = undefined;
  private flushScheduled = false;
  private closed = false;

  /** `alone`: the only confirm of this settle, sent within it (the connection need not gather the tick's other frames with it). */
  constructor(private readonly send: (deliveryTag: number, multiple: boolean, outcome: ConfirmOutcome, alone: boolean) => void) {}

  /** Publishes whose confirm has not been sent. */
  get outstanding(): number {
    return this.nextSeq - this.nextToSend;
  }

  /** A publish was handled: confirm it when `durable` settles; a refused one is nacked at once, in its turn. */
  track(durable: Durable, refused = false): void {
    const seq = this.nextSeq++;
    if (refused || durable === undefined) {
      this.settle({ first: seq, last: seq }, refused ? 'nack' : 'ack');
      return;
    }
    const pending = this.lastRange;
    if (durable === this.lastDurable && pending !== undefined && pending.last === seq - 1) {
      pending.last = seq;
      return;
    }
    const range: SeqRange = { first: seq, last: seq };
    this.lastDurable = durable;
    this.lastRange = range;
    durable.then(
      () => this.settleWaiting(range, 'ack'),
      () => this.settleWaiting(range, 'nack'),
    );
  }

  /** Send every confirm that is ready and in order now (before a channel.close, so none is lost behind it). */
  flush(): void {
    this.flushScheduled = false;
    while (!this.closed) {
      const first = this.nextToSend;
      let entry = this.ready.get(first);
      if (entry === undefined) return;
      const outcome = entry.outcome;
      let last = first - 1;
      while (entry !== undefined && entry.outcome === outcome) {
        this.ready.delete(last + 1);
        last = entry.range.last;
        entry = this.ready.get(last + 1);
      }
      this.nextToSend = last + 1;
      this.send(last, last > first, outcome, false);
    }
  }

  /** The channel is gone: nothing more is sent. */
  close(): void {
    this.closed = true;
    this.ready.clear();
    this.lastDurable = undefined;
    this.lastRange = undefined;
  }

  /** The Durable a range waited on settled: later publishes must not join that range any more. */
  private settleWaiting(range: SeqRange, outcome: ConfirmOutcome): void {
    if (this.lastRange === range) {
      this.lastDurable = undefined;
      this.lastRange = undefined;
    }
    // The last outstanding publish, next in turn: the tick's flush would send exactly this frame, a tick later.
    if (!this.closed && range.first === this.nextToSend && range.last === this.nextSeq - 1) {
      this.nextToSend = range.last + 1;
      this.send(range.last, range.last > range.first, outcome, true);
      return;
    }
    this.settle(range, outcome);
  }

  private settle(range: SeqRange, outcome: ConfirmOutcome): void {
    if (this.closed) return;
    this.ready.set(range.first, { range, outcome });
    if (range.first === this.nextToSend && !this.flushScheduled) {
      this.flushScheduled = true;
      // After the current tick's microtasks: durables resolved together go out as one frame.
      process.nextTick(() => this.flush());
    }
  }
}
