/**
 * Projection of the messages waiting in durable AMQP queues (ready or
 * delivered-but-unacked: the log cannot tell those apart and need not, since
 * after a restart every unacked message is ready again). Pure.
 */
import type { AckBody, DeliverBody, DropBody, MsgBody } from './records.js';
import type { BrokerState, QueueState, StoredMessage } from './state.js';

export function applyMsgToQueues(state: BrokerState, body: MsgBody, message: StoredMessage): void {
  const destinations = body.u;
  if (destinations === undefined) return;
  // Indexed loops, not for-of with destructuring (an iterator per entry): these run for every record replayed.
  for (let i = 0; i < destinations.length; i++) {
    const destination = destinations[i]!;
    const queue = state.queues.get(destination[0]);
    if (queue) enqueueForQueue(queue, destination[1], message);
  }
}

export function enqueueForQueue(queue: QueueState, seq: number, message: StoredMessage): void {
  queue.pending.set(seq, { message, qos: 1, deliveries: 0 });
  if (seq >= queue.nextSeq) queue.nextSeq = seq + 1;
}

export function removeFromQueue(queue: QueueState, body: AckBody | DropBody): void {
  let removed = 0;
  const seqs = body.s;
  for (let i = 0; i < seqs.length; i++) if (queue.pending.delete(seqs[i]!)) removed++;
  if ('why' in body && body.why === 'bound') queue.dropped += removed;
}

export function markQueueDelivered(queue: QueueState, body: DeliverBody): void {
  for (const seq of body.s) {
    const entry = queue.pending.get(seq);
    if (entry) entry.deliveries += 1;
  }
}
