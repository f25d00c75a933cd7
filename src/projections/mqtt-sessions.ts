/**
 * Projection of persistent MQTT sessions: subscriptions, the offline queue and
 * in-flight messages (pending by seq), inbound QoS 2 ids (rx2) and outbound
 * PUBREL obligations (rel). Pure: mutates only the state it is given.
 *
 * The same functions also drive clean sessions in the broker's runtime (where
 * nothing is logged), so a session behaves the same whether durable or not.
 */
import type { AckBody, DeliverBody, DropBody, MsgBody, RelBody, Rx2Body, SessionBody, SubBody, UnsubBody } from './records.js';
import { newSession, type BrokerState, type SessionState, type StoredMessage } from './state.js';

export function applySession(state: BrokerState, body: SessionBody): void {
  if (body.op === 'open') {
    if (!state.sessions.has(body.c)) state.sessions.set(body.c, newSession(body.c));
  } else {
    state.sessions.delete(body.c);
  }
}

export function applySub(session: SessionState, body: SubBody): void {
  session.subscriptions.set(body.f, body.qos);
}

export function applyUnsub(session: SessionState, body: UnsubBody): void {
  session.subscriptions.delete(body.f);
}

/** Enqueue a message for the sessions listed in the msg record. */
export function applyMsgToSessions(state: BrokerState, body: MsgBody, message: StoredMessage): void {
  const destinations = body.s;
  if (destinations === undefined) return;
  // Indexed loops, not for-of with destructuring (an iterator per entry): these run for every record replayed.
  for (let i = 0; i < destinations.length; i++) {
    const destination = destinations[i]!;
    const session = state.sessions.get(destination[0]);
    if (session) enqueueForSession(session, destination[1], destination[2], message);
  }
}

export function enqueueForSession(session: SessionState, seq: number, qos: 1 | 2, message: StoredMessage): void {
  session.pending.set(seq, { message, qos, deliveries: 0 });
  if (seq >= session.nextSeq) session.nextSeq = seq + 1;
}

export function removeFromSession(session: SessionState, body: AckBody | DropBody): void {
  let removed = 0;
  const seqs = body.s;
  for (let i = 0; i < seqs.length; i++) if (session.pending.delete(seqs[i]!)) removed++;
  // Count only what this record really removed: an ack may have finished a message just before its drop.
  if ('why' in body) session.dropped += removed;
}

export function markSessionDelivered(session: SessionState, body: DeliverBody): void {
  for (const seq of body.s) {
    const entry = session.pending.get(seq);
    if (entry) entry.deliveries += 1;
  }
}

export function applyRx2(session: SessionState, body: Rx2Body): void {
  if (body.clear) session.rx2.delete(body.id);
  else session.rx2.add(body.id);
}

/** PUBREC: the message is the receiver's now; only the PUBREL obligation remains. */
export function applyRel(session: SessionState, body: RelBody): void {
  if (body.clear) {
    session.rel.delete(body.id);
    return;
  }
  if (body.s !== undefined) {
    session.pending.delete(body.s);
    session.rel.set(body.id, body.s);
  }
}
