/**
 * Projection of persistent MQTT sessions: subscriptions, inbound QoS 2 ids
 * (rx2) and outbound PUBREL obligations (rel); their queue of messages is a
 * destination like an AMQP queue's (destinations.ts). Pure: mutates only the
 * state it is given.
 *
 * The same functions also drive clean sessions in the broker's runtime (where
 * nothing is logged), so a session behaves the same whether durable or not.
 */
import type { RelBody, Rx2Body, SessionBody, SubBody, UnsubBody } from './records.js';
import { pendingWillOf } from './pending-will.js';
import { newSession, type BrokerState, type SessionState } from './state.js';
import { subscriptionOptionsOf } from './subscription-options.js';

export function applySession(state: BrokerState, body: SessionBody): void {
  if (body.op === 'open') {
    let session = state.sessions.get(body.c);
    if (session === undefined) {
      session = newSession(body.c);
      state.sessions.set(body.c, session);
    }
    // The CONNECT that resumed it says how long it lives; a connected session has no expiry time.
    if (body.e === undefined) delete session.expiryInterval;
    else session.expiryInterval = body.e;
    delete session.expiresAt;
    // Back before the will delay passed: the will is never published [MQTT-3.1.2-8].
    delete session.will;
  } else if (body.op === 'offline') {
    const session = state.sessions.get(body.c);
    if (session === undefined) return;
    // The record states the whole offline state: what it leaves out is no longer pending.
    if (body.until === undefined) delete session.expiresAt;
    else session.expiresAt = body.until;
    if (body.w === undefined) delete session.will;
    else session.will = pendingWillOf(body.w);
  } else {
    state.sessions.delete(body.c);
  }
}

/** A subscription replaces an earlier one with the same filter, options included [MQTT-3.8.4-3]. */
export function applySub(session: SessionState, body: SubBody): void {
  session.subscriptions.set(body.f, body.qos);
  const options = subscriptionOptionsOf(body);
  if (options === undefined) session.subscriptionOptions.delete(body.f);
  else session.subscriptionOptions.set(body.f, options);
}

export function applyUnsub(session: SessionState, body: UnsubBody): void {
  session.subscriptions.delete(body.f);
  session.subscriptionOptions.delete(body.f);
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
    // A shared delivery's seq is its group's (shared-groups.ts applySharedRel), not this session's.
    if (body.g === undefined) session.pending.delete(body.s);
    session.rel.set(body.id, body.s);
  }
}
