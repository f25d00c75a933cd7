/**
 * Messages and consumers summed over every AMQP queue, as the management
 * overview and the aggregated metrics show them. O(queues), computed when
 * asked: nothing on the hot paths keeps these up to date.
 */
import type { QueueRuntime } from './amqp-queue.js';

export interface QueueTotals {
  readonly ready: number;
  readonly unacknowledged: number;
  /** ready + unacknowledged. */
  readonly messages: number;
  readonly consumers: number;
}

export function queueTotals(broker: { readonly queues: ReadonlyMap<string, QueueRuntime> }): QueueTotals {
  let ready = 0;
  let unacknowledged = 0;
  let consumers = 0;
  for (const queue of broker.queues.values()) {
    ready += queue.readyCount;
    unacknowledged += queue.unacked.size;
    consumers += queue.consumers.length;
  }
  return { ready, unacknowledged, messages: ready + unacknowledged, consumers };
}
