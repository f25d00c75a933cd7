/**
 * apply(state, record): the one fold that turns the log into broker state.
 * Live, the broker calls it for each record as it appends it; at start-up,
 * replay calls it for each record read back. Both must give the same state —
 * the central invariant, checked by test/property/live-equals-replay.
 *
 * One flat dispatch on the kind; each leaf lives in the projection it changes.
 * Records naming a session or queue that no longer exists are ignored: the
 * order of the log makes them harmless (e.g. an ack after a queue delete).
 */
import { assert } from '../assert.js';
import { applyBind, applyExchange, applyQueue } from './amqp-topology.js';
import { applyDoc } from './collections.js';
import { applyMsgToDestinations, destinationOf, markDelivered, removeFinished } from './destinations.js';
import { applyRel, applyRx2, applySession, applySub, applyUnsub } from './mqtt-sessions.js';
import { messagePropertiesOf } from './message-properties.js';
import { RecordKind, type AckBody, type BodyOf, type BrokerRecord, type MsgBody } from './records.js';
import { applyRetain } from './retained.js';
import { applySessionEndToGroups, applySharedRel, applySharedSub, applySharedUnsub } from './shared-groups.js';
import type { BrokerState, StoredMessage } from './state.js';

/** `held`: a msg record's message itself, for a state whose records are in no log (core/transient-committer.ts). */
export function apply(state: BrokerState, record: BrokerRecord, held?: StoredMessage): void {
  // The message is built only when it fails: this runs for every record, live and replayed.
  if (record.lsn <= state.lastLsn) assert(false, `record LSN ${record.lsn} applied after LSN ${state.lastLsn}`);
  applyBody(state, record, held);
  state.lastLsn = record.lsn;
  state.lastTimestamp = record.timestamp;
}

function applyBody(state: BrokerState, record: BrokerRecord, held: StoredMessage | undefined): void {
  const body = record.body;
  switch (record.kind) {
    case RecordKind.session:
      applySessionEndToGroups(state, body as BodyOf['session']);
      return applySession(state, body as BodyOf['session']);
    case RecordKind.sub:
      applySharedSub(state, body as BodyOf['sub']);
      return withSession(state, body as BodyOf['sub'], applySub);
    case RecordKind.unsub:
      applySharedUnsub(state, body as BodyOf['unsub']);
      return withSession(state, body as BodyOf['unsub'], applyUnsub);
    case RecordKind.msg: return applyMsgToDestinations(state, body as MsgBody, record.lsn, held);
    case RecordKind.ack: return applyFinished(state, body as AckBody);
    case RecordKind.drop: return applyFinished(state, body as BodyOf['drop']);
    case RecordKind.deliver: return applyDeliver(state, body as BodyOf['deliver']);
    case RecordKind.retain: return applyRetain(state, body as BodyOf['retain'], record.lsn, record.timestamp);
    case RecordKind.rx2: return withSession(state, body as BodyOf['rx2'], applyRx2);
    case RecordKind.rel:
      applySharedRel(state, body as BodyOf['rel']);
      return withSession(state, body as BodyOf['rel'], applyRel);
    case RecordKind.exchange: return applyExchange(state, body as BodyOf['exchange']);
    case RecordKind.queue: return applyQueue(state, body as BodyOf['queue']);
    case RecordKind.bind: return applyBind(state, body as BodyOf['bind']);
    case RecordKind.doc: return applyDoc(state, body as BodyOf['doc'], record.lsn);
    // Group bounds: what they mean for replay is transaction-groups.ts's; the state does not change.
    case RecordKind.tx: return;
    default: throw new Error(`unknown record kind ${record.kind} at LSN ${record.lsn}: written by a newer Cairn?`);
  }
}

function withSession<B extends { c: string }>(
  state: BrokerState, body: B, leaf: (session: NonNullable<ReturnType<BrokerState['sessions']['get']>>, body: B) => void,
): void {
  const session = state.sessions.get(body.c);
  if (session) leaf(session, body);
}

export function storedMessageOf(body: MsgBody, lsn: number, timestamp: number): StoredMessage {
  // A moved copy (segment-release.ts) carries the time of the message's first record.
  const message: { -readonly [K in keyof StoredMessage]: StoredMessage[K] } = { lsn, timestamp: body.at ?? timestamp, topic: body.t, payload: body.p };
  if (body.x !== undefined) message.exchange = body.x;
  if (body.h !== undefined) message.properties = body.h;
  if (body.qos !== undefined) message.qos = body.qos;
  if (body.from !== undefined) message.from = body.from;
  if (body.r) message.retain = true;
  if (body.rp) message.publishedRetain = true;
  if (body.m !== undefined) message.mqttProperties = messagePropertiesOf(body.m);
  return message;
}

function applyFinished(state: BrokerState, body: AckBody | BodyOf['drop']): void {
  const destination = destinationOf(state, body);
  if (destination) removeFinished(destination, body);
}

function applyDeliver(state: BrokerState, body: BodyOf['deliver']): void {
  const destination = destinationOf(state, body);
  if (destination) markDelivered(destination, body);
}
