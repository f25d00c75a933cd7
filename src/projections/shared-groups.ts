/**
 * Projection of shared-subscription groups (`$share/{group}/{filter}`, MQTT 5.0
 * §4.8.2, offered to 3.1.1 clients as Mosquitto and EMQX do). A group is a
 * destination of its own, like an AMQP queue: a msg record lists it (`g`) with
 * its seq, ack/drop/deliver records name it, and each message is consumed by
 * one member.
 *
 * Membership needs no record of its own: a persistent session's `sub` record
 * for a shared filter joins the group (creating it), its `unsub` record or the
 * session's end leaves it, and the group — with the messages still queued in
 * it — is gone when its last persistent member leaves (a shared
 * subscription lives as long as a session subscribed to it, §4.8.2).
 * Pure: mutates only the state it is given.
 */
import type { RelBody, SessionBody, SubBody, UnsubBody } from './records.js';
import { newGroup, type BrokerState } from './state.js';

export const sharedFilterPrefix = '$share/';

/** Whether a (valid) subscription filter names a shared subscription; its whole text is the group's name. */
export function isSharedFilter(filter: string): boolean {
  return filter.startsWith(sharedFilterPrefix);
}

export function applySharedSub(state: BrokerState, body: SubBody): void {
  if (!isSharedFilter(body.f) || !state.sessions.has(body.c)) return;
  let group = state.groups.get(body.f);
  if (group === undefined) {
    group = newGroup(body.f);
    state.groups.set(body.f, group);
  }
  group.members.add(body.c);
}

export function applySharedUnsub(state: BrokerState, body: UnsubBody): void {
  if (isSharedFilter(body.f)) leaveGroup(state, body.c, body.f);
}

/** Before a session ends (clean_session=1 over it): it leaves every group it was in. */
export function applySessionEndToGroups(state: BrokerState, body: SessionBody): void {
  if (body.op !== 'end') return;
  const session = state.sessions.get(body.c);
  if (session === undefined) return;
  for (const filter of session.subscriptions.keys()) {
    if (isSharedFilter(filter)) leaveGroup(state, body.c, filter);
  }
}

/** A member's PUBREC for a shared QoS 2 delivery: the message leaves its group. */
export function applySharedRel(state: BrokerState, body: RelBody): void {
  if (body.g !== undefined && body.s !== undefined && !body.clear) state.groups.get(body.g)?.pending.delete(body.s);
}

function leaveGroup(state: BrokerState, clientId: string, name: string): void {
  const group = state.groups.get(name);
  if (group === undefined) return;
  group.members.delete(clientId);
  if (group.members.size === 0) state.groups.delete(name);
}
