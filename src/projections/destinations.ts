/**
 * The projection of destinations — persistent MQTT sessions and durable AMQP
 * queues alike: a msg record enqueues a reference for each destination it
 * lists, ack and drop records remove entries, deliver records count
 * deliveries. Pure; the broker's runtime also calls these directly for clean
 * sessions, where nothing is logged.
 */
import { EntryFlag } from './entry-queue.js';
import type { AckBody, DeliverBody, DestinationRef, DropBody, MsgBody } from './records.js';
import type { BrokerState, DestinationState, StoredMessage } from './state.js';

export function destinationOf(state: BrokerState, ref: DestinationRef): DestinationState | undefined {
  return 'c' in ref ? state.sessions.get(ref.c) : state.queues.get(ref.q);
}

/** A msg record: one reference per listed destination (sessions with their delivery QoS, queues at QoS 1). */
export function applyMsgToDestinations(state: BrokerState, body: MsgBody, lsn: number): void {
  if (body.movedFrom !== undefined) return relinkMoved(state, body, body.movedFrom, lsn);
  const size = body.p.byteLength;
  // Indexed loops, not for-of with destructuring (an iterator per entry): these run for every record replayed.
  const sessions = body.s;
  if (sessions !== undefined) {
    for (let i = 0; i < sessions.length; i++) {
      const row = sessions[i]!;
      const session = state.sessions.get(row[0]);
      if (session) enqueue(session, row[1], lsn, size, row[2]);
    }
  }
  const queues = body.u;
  if (queues !== undefined) {
    for (let i = 0; i < queues.length; i++) {
      const row = queues[i]!;
      const queue = state.queues.get(row[0]);
      if (queue) enqueue(queue, row[1], lsn, size, 1);
    }
  }
}

/** A moved message: the entries that still reference the old record reference the new one. */
function relinkMoved(state: BrokerState, body: MsgBody, from: number, to: number): void {
  for (const [client, seq] of body.s ?? []) state.sessions.get(client)?.pending.relink(seq, from, to);
  for (const [queue, seq] of body.u ?? []) state.queues.get(queue)?.pending.relink(seq, from, to);
}

/** `held`: the message itself, for entries that are not in the log (clean sessions). */
export function enqueue(destination: DestinationState, seq: number, lsn: number, size: number, qos: 1 | 2, held?: StoredMessage): void {
  destination.pending.insert(seq, lsn, size, qos === 2 ? EntryFlag.qos2 : 0, held);
  if (seq >= destination.nextSeq) destination.nextSeq = seq + 1;
}

export function removeFinished(destination: DestinationState, body: AckBody | DropBody): void {
  let removed = 0;
  const seqs = body.s;
  for (let i = 0; i < seqs.length; i++) if (destination.pending.delete(seqs[i]!)) removed++;
  // Count only what this record really removed: an ack may have finished a message just before its drop.
  if ('why' in body && body.why !== 'purge') destination.dropped += removed;
}

export function markDelivered(destination: DestinationState, body: DeliverBody): void {
  for (const seq of body.s) destination.pending.markDelivered(seq);
}

export function qosOf(flags: number): 1 | 2 {
  return (flags & EntryFlag.qos2) !== 0 ? 2 : 1;
}
