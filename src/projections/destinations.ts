/**
 * The projection of destinations — persistent MQTT sessions, durable AMQP
 * queues and persistent shared-subscription groups alike: a msg record enqueues a reference for each destination it
 * lists, ack and drop records remove entries, deliver records count
 * deliveries. Pure; clean sessions' records, which are logged nowhere, go
 * through the same fold (core/transient-committer.ts).
 */
import { EntryFlag } from './entry-queue.js';
import type { AckBody, DeliverBody, DestinationRef, DropBody, MsgBody } from './records.js';
import type { BrokerState, DestinationState, StoredMessage } from './state.js';

export function destinationOf(state: BrokerState, ref: DestinationRef): DestinationState | undefined {
  if ('c' in ref) return state.sessions.get(ref.c);
  return 'q' in ref ? state.queues.get(ref.q) : state.groups.get(ref.g);
}

/**
 * A msg record: one reference per listed destination (sessions and shared groups with their delivery QoS, queues at QoS 1).
 * `held`: the message, for the sessions of a state whose records are in no log (clean sessions).
 */
export function applyMsgToDestinations(state: BrokerState, body: MsgBody, lsn: number, held?: StoredMessage): void {
  if (body.movedFrom !== undefined) return relinkMoved(state, body, body.movedFrom, lsn);
  const size = body.p.byteLength;
  if (body.s !== undefined) enqueueRows(state.sessions, body.s, lsn, size, held);
  const queues = body.u;
  if (queues !== undefined) {
    for (let i = 0; i < queues.length; i++) {
      const row = queues[i]!;
      const queue = state.queues.get(row[0]);
      if (queue) enqueue(queue, row[1], lsn, size, 1);
    }
  }
  if (body.g !== undefined) enqueueRows(state.groups, body.g, lsn, size);
  // A dead-lettered message leaves its queue in the very record that republishes it.
  const dead = body.d;
  if (dead !== undefined) state.queues.get(dead[0])?.pending.delete(dead[1]);
}

/** Rows of [destination name, seq, qos] (sessions, groups). */
export function enqueueRows(destinations: ReadonlyMap<string, DestinationState>, rows: ReadonlyArray<readonly [string, number, 1 | 2]>, lsn: number, size: number, held?: StoredMessage): void {
  // Indexed loops, not for-of with destructuring (an iterator per entry): these run for every record replayed.
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    const destination = destinations.get(row[0]);
    if (destination) enqueue(destination, row[1], lsn, size, row[2], held);
  }
}

/** A moved message: the entries that still reference the old record reference the new one. */
function relinkMoved(state: BrokerState, body: MsgBody, from: number, to: number): void {
  for (const [client, seq] of body.s ?? []) state.sessions.get(client)?.pending.relink(seq, from, to);
  for (const [queue, seq] of body.u ?? []) state.queues.get(queue)?.pending.relink(seq, from, to);
  for (const [group, seq] of body.g ?? []) state.groups.get(group)?.pending.relink(seq, from, to);
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
  if ('why' in body && (body.why === 'bound' || body.why === 'acl')) destination.dropped += removed;
}

export function markDelivered(destination: DestinationState, body: DeliverBody): void {
  for (const seq of body.s) destination.pending.markDelivered(seq);
}

export function qosOf(flags: number): 1 | 2 {
  return (flags & EntryFlag.qos2) !== 0 ? 2 : 1;
}
