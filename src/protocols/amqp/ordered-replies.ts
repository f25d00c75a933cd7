/**
 * Synchronous method replies of one channel (declare-ok, bind-ok, ...), sent
 * in the order their requests arrived even when some wait for a Durable.
 *
 * AMQP replies on a channel are positional: a client that pipelines a
 * durable queue.declare and a transient queue.bind must get declare-ok
 * first, although bind-ok is ready at once. A reply with nothing to wait for
 * and nothing ahead of it is sent synchronously, the common case.
 */
import type { Durable } from '../../core/api.js';

interface PendingReply {
  ready: boolean;
  readonly send: () => void;
}

export class OrderedReplies {
  private readonly pending: PendingReply[] = [];
  private closed = false;

  /** `onFailure`: a Durable rejected (the log failed); the reply is never sent. */
  constructor(private readonly onFailure: (error: unknown) => void) {}

  /** Run `send` once `durable` resolved and every earlier reply was sent. */
  add(durable: Durable, send: () => void): void {
    if (this.closed) return;
    if (durable === undefined && this.pending.length === 0) {
      send();
      return;
    }
    const reply: PendingReply = { ready: durable === undefined, send };
    this.pending.push(reply);
    durable?.then(
      () => {
        reply.ready = true;
        this.flush();
      },
      (error: unknown) => {
        if (this.closed) return;
        this.close();
        this.onFailure(error);
      },
    );
  }

  close(): void {
    this.closed = true;
    this.pending.length = 0;
  }

  private flush(): void {
    while (!this.closed && this.pending[0]?.ready === true) this.pending.shift()!.send();
  }
}
