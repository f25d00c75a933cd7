/**
 * Releasing old segments that a few live messages hold. Queued messages are
 * references into the log, so one forgotten message would keep every segment
 * from its own on, however much else retention could remove. When the
 * segments retention would remove (were nothing queued) are mostly dead, the
 * live references in them are written again at the head of the log, and
 * their destinations point at the copies:
 *
 * - a message: a msg record with the same body and `movedFrom` = the LSN it was
 *   moved from, listing only the (destination, seq) pairs that still hold
 *   it; apply relinks those entries (seq, delivery count and flags stay);
 * - a document: its doc record again (same collection, id and content).
 *
 * Still append-only: the copies are ordinary records, `cairn inspect trace`
 * shows a message's move, and a crash before the copies are durable leaves
 * the old references (and their segments) in place. Automatic, as part of
 * each snapshot (`--release-segments off` turns it off): only while the live
 * bytes are at most a quarter of the bytes released, and at most
 * `relocatedMessagesMax` references per round, so a large backlog (segments
 * that are mostly live) is never copied.
 */
import { RecordKind, type BrokerRecord, type DocBody, type MsgBody } from '../projections/records.js';
import type { BrokerState } from '../projections/state.js';
import { record, type PendingRecord } from './committer.js';

/** References moved per round at most: each is one positioned read while the snapshot waits. */
export const relocatedMessagesMax = 10_000;
/** Live bytes copied per released byte at most. */
const copiedPerReleasedMax = 0.25;

export interface Releasable {
  /** Retention would remove every record below this LSN if nothing were queued. */
  readonly beforeLsn: number;
  /** The bytes of those segments. */
  readonly bytes: number;
}

/** The references (message entries and documents) below `beforeLsn`, by the LSN they reference; undefined past `limit`. */
function liveReferencesBefore(state: BrokerState, beforeLsn: number, limit: number): Map<number, MovedReference> | undefined {
  const byLsn = new Map<number, MovedReference>();
  const at = (lsn: number): MovedReference => {
    let reference = byLsn.get(lsn);
    if (reference === undefined) {
      reference = { sessions: [], queues: [], groups: [], documents: 0 };
      byLsn.set(lsn, reference);
    }
    return reference;
  };
  let count = 0;
  for (const session of state.sessions.values()) {
    const found = session.pending.referencesBefore(beforeLsn, limit - count);
    if (found === undefined) return undefined;
    for (const [seq, lsn] of found) at(lsn).sessions.push([session.clientId, seq]);
    count += found.length;
  }
  for (const queue of state.queues.values()) {
    const found = queue.pending.referencesBefore(beforeLsn, limit - count);
    if (found === undefined) return undefined;
    for (const [seq, lsn] of found) at(lsn).queues.push([queue.name, seq]);
    count += found.length;
  }
  for (const group of state.groups.values()) {
    const found = group.pending.referencesBefore(beforeLsn, limit - count);
    if (found === undefined) return undefined;
    for (const [seq, lsn] of found) at(lsn).groups.push([group.name, seq]);
    count += found.length;
  }
  for (const collection of state.collections.values()) {
    // In LSN order (collections.ts): the old ones come first.
    for (const lsn of collection.documents.values()) {
      if (lsn >= beforeLsn) break;
      at(lsn).documents++;
      if (++count > limit) return undefined;
    }
  }
  return byLsn;
}

interface MovedReference {
  readonly sessions: Array<readonly [client: string, seq: number]>;
  readonly queues: Array<readonly [queue: string, seq: number]>;
  readonly groups: Array<readonly [group: string, seq: number]>;
  documents: number;
}

/**
 * The records that move every live reference out of the releasable segments, or an empty list when
 * there is none or moving is not worth it (more than a quarter of the bytes, or too many references).
 * `read` reads a record by LSN (a damaged one throws: the caller gives up this round).
 */
export function relocationRecords(state: BrokerState, releasable: Releasable, read: (lsn: number) => BrokerRecord): PendingRecord[] {
  const references = liveReferencesBefore(state, releasable.beforeLsn, relocatedMessagesMax);
  if (references === undefined || references.size === 0) return [];
  const records: PendingRecord[] = [];
  let copiedBytes = 0;
  for (const [lsn, reference] of [...references].sort((a, b) => a[0] - b[0])) {
    const old = read(lsn);
    if (old.kind === RecordKind.doc) {
      const body = old.body as DocBody;
      copiedBytes += JSON.stringify(body.doc).length;
      records.push(record('doc', body));
      continue;
    }
    if (old.kind !== RecordKind.msg) throw new Error(`LSN ${lsn} is referenced as a queued message but holds a record of kind ${old.kind}`);
    const body = old.body as MsgBody;
    copiedBytes += body.p.byteLength;
    // `at`: message TTLs count from the first record of the message, not from its move.
    const moved: { -readonly [K in keyof MsgBody]: MsgBody[K] } = { ...body, movedFrom: lsn, at: body.at ?? old.timestamp };
    if (reference.sessions.length > 0) moved.s = withQos(reference.sessions, body.s);
    else delete moved.s;
    if (reference.queues.length > 0) moved.u = reference.queues;
    else delete moved.u;
    if (reference.groups.length > 0) moved.g = withQos(reference.groups, body.g);
    else delete moved.g;
    records.push(record('msg', moved));
  }
  return copiedBytes <= releasable.bytes * copiedPerReleasedMax ? records : [];
}

/** (destination, seq) pairs with the delivery QoS the original msg record gave each (sessions, shared groups). */
function withQos(
  pairs: ReadonlyArray<readonly [name: string, seq: number]>, original: ReadonlyArray<readonly [string, number, 1 | 2]> | undefined,
): Array<readonly [string, number, 1 | 2]> {
  const qosOf = new Map((original ?? []).map(([name, seq, qos]) => [`${name}\u0000${seq}`, qos] as const));
  return pairs.map(([name, seq]) => [name, seq, qosOf.get(`${name}\u0000${seq}`) ?? 1] as const);
}
