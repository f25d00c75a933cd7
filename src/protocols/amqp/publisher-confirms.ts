/**
 * Publisher confirms for one channel in confirm mode (RabbitMQ's extension):
 * every basic.publish gets the next sequence number, and the broker answers
 * each with basic.ack once the message is durable, or basic.nack if the log
 * failed to make it so.
 *
 * Invariants:
 * - A confirm is sent only after its Durable settled (at once when there was
 *   nothing to wait for), so an ack means "fsynced for every durable queue".
 * - Confirms leave in sequence order: the confirm for N is never sent before
 *   every confirm below N. A later durable that resolves first waits.
 * - A run of ready confirms with the same outcome goes out as one frame with
 *   multiple=true; ready confirms are flushed once per tick, so a burst of
 *   publishes in one read costs one ack.
 */
import type { Durable } from '../../core/api.js';

export type ConfirmOutcome = 'ack' | 'nack';

export class PublisherConfirms {
  /** The sequence number the next publish gets (spec: counting from 1 after confirm.select). */
  private nextSeq = 1;
  /** The lowest sequence number not confirmed to the client yet. */
  private nextToSend = 1;
  /** Settled but not yet sent, by sequence number. */
  private readonly ready = new Map<number, ConfirmOutcome>();
  private flushScheduled = false;
  private closed = false;

  constructor(private readonly send: (deliveryTag: number, multiple: boolean, outcome: ConfirmOutcome) => void) {}

  /** Publishes whose confirm has not been sent. */
  get outstanding(): number {
    return this.nextSeq - this.nextToSend;
  }

  /** A publish was handled: confirm it when `durable` settles. */
  track(durable: Durable): void {
    const seq = this.nextSeq++;
    if (durable === undefined) {
      this.settle(seq, 'ack');
      return;
    }
    durable.then(
      () => this.settle(seq, 'ack'),
      () => this.settle(seq, 'nack'),
    );
  }

  /** Send every confirm that is ready and in order now (before a channel.close, so none is lost behind it). */
  flush(): void {
    this.flushScheduled = false;
    while (!this.closed) {
      const first = this.nextToSend;
      const outcome = this.ready.get(first);
      if (outcome === undefined) return;
      let last = first;
      this.ready.delete(first);
      while (this.ready.get(last + 1) === outcome) {
        last++;
        this.ready.delete(last);
      }
      this.nextToSend = last + 1;
      this.send(last, last > first, outcome);
    }
  }

  /** The channel is gone: nothing more is sent. */
  close(): void {
    this.closed = true;
    this.ready.clear();
  }

  private settle(seq: number, outcome: ConfirmOutcome): void {
    if (this.closed) return;
    this.ready.set(seq, outcome);
    if (seq === this.nextToSend && !this.flushScheduled) {
      this.flushScheduled = true;
      // After the current tick's microtasks: durables resolved together go out as one frame.
      process.nextTick(() => this.flush());
    }
  }
}
