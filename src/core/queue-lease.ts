/**
 * x-expires: a queue unused for that many milliseconds is deleted, as
 * RabbitMQ does. Used means: a consumer on it, a basic.get, a (re)declare.
 * While it has consumers no timer runs; when the last one goes, the lease
 * starts again. After a restart every lease starts afresh (RabbitMQ does the
 * same): the time a queue spent unused before the restart is not in the log.
 */
import type { QueueRuntime } from './amqp-queue.js';
import type { Timers } from './timers.js';

export class QueueLeases {
  private readonly running = new Map<QueueRuntime, unknown>();

  constructor(private readonly timers: Timers, private readonly expired: (queue: QueueRuntime) => void) {}

  /** The queue was used: its lease starts again, unless consumers keep it in use. */
  renew(queue: QueueRuntime): void {
    const expiresMs = queue.queueArguments?.['x-expires'];
    if (expiresMs === undefined) return;
    this.end(queue);
    if (queue.consumers.length > 0) return;
    this.running.set(queue, this.timers.set(() => {
      this.running.delete(queue);
      if (queue.consumers.length === 0) this.expired(queue);
    }, expiresMs));
  }

  /** A consumer holds the queue, or the queue is gone. */
  end(queue: QueueRuntime): void {
    const handle = this.running.get(queue);
    if (handle === undefined) return;
    this.timers.clear(handle);
    this.running.delete(queue);
  }
}
