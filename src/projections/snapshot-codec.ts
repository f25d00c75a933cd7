/**
 * Broker state ⇄ a plain, MessagePack-friendly value, for snapshot files and
 * for comparing states in tests (two states are equal iff their encodings are).
 *
 * Layout (version 3): a destination's entries are references — five columns
 * (seq, LSN, size, deliveries, flags), packed as varints (seqs and LSNs as
 * differences, the others as runs: entry-columns-codec.ts), so a snapshot
 * costs O(entries), about a byte an entry for a queue filled in order, with
 * no object per entry and no payload. Messages not in the log (held) are
 * written inline. Map order is kept, so a restored state iterates like the
 * original. A queue's row ends with its x-arguments only when it has some:
 * rows written before arguments existed read the same. Shared-subscription
 * groups are an optional trailing field: a snapshot written before groups
 * existed reads as having none. A session's subscription is [filter, qos],
 * with its MQTT 5 options (short keys, as in the sub record) as a third
 * element only when it has some.
 *
 * Older versions are still read, and the next snapshot is written as
 * version 3: version 2 (the same, with each column the raw bytes of its typed
 * array, little-endian: 25 bytes an entry), and version 1 (Cairn 0.1: every
 * queued message's payload inline), whose messages become held entries, so
 * nothing depends on segments that the old retention may have removed.
 */
import { decodeCollections, encodeCollections, type EncodedCollection } from './collections.js';
import { packColumns, unpackColumns, type PackedColumns } from './entry-columns-codec.js';
import { EntryQueue } from './entry-queue.js';
import { bindingKey } from './state.js';
import { pendingWillOf, willBody } from './pending-will.js';
import type { QueueArguments, WillBody } from './records.js';
import { subscriptionOptionsBody, subscriptionOptionsOf, type SubscriptionOptionsBody } from './subscription-options.js';
import type {
  BindingState, BrokerState, DestinationState, ExchangeState, GroupState, QueueState, RetainedValue, SessionState, StoredMessage, SubscriptionOptions,
} from './state.js';

export const snapshotFormatVersion = 3;
const readableVersions = [1, 2, 3];

/**
 * The five columns (version 3: packed, see entry-columns-codec.ts; version 2: raw seqs f64, lsns f64, sizes u32,
 * deliveries u32, flags u8), then the held messages by seq.
 */
type EncodedEntries = [...PackedColumns, Array<[number, StoredMessage]>];

/** An MQTT 5 session's expiry interval (s) and, while it is offline, its end (ms since the epoch) and its delayed will (as in the offline record). */
interface EncodedSessionExpiry { e?: number; until?: number; w?: WillBody }

function sessionExpiryOf(session: SessionState): EncodedSessionExpiry {
  return {
    ...(session.expiryInterval === undefined ? {} : { e: session.expiryInterval }), ...(session.expiresAt === undefined ? {} : { until: session.expiresAt }),
    ...(session.will === undefined ? {} : { w: willBody(session.will) }),
  };
}

/** Filter, QoS and, only for a subscription with MQTT 5 options, those options. */
type EncodedSubscription = [string, 0 | 1 | 2] | [string, 0 | 1 | 2, SubscriptionOptionsBody];

function encodeSubscriptions(session: SessionState): EncodedSubscription[] {
  return [...session.subscriptions].map(([filter, qos]): EncodedSubscription => {
    const options = session.subscriptionOptions.get(filter);
    return options === undefined ? [filter, qos] : [filter, qos, subscriptionOptionsBody(options)];
  });
}

function decodeSubscriptionOptions(subscriptions: readonly EncodedSubscription[]): Map<string, SubscriptionOptions> {
  const options = new Map<string, SubscriptionOptions>();
  for (const [filter, , body] of subscriptions) {
    const decoded = body === undefined ? undefined : subscriptionOptionsOf(body);
    if (decoded !== undefined) options.set(filter, decoded);
  }
  return options;
}

export interface EncodedState {
  v: number;
  lastLsn: number;
  lastTimestamp: number;
  /** The trailing expiry element is present only for an MQTT 5 session with an expiry (older snapshots have none). */
  sessions: Array<[string, EncodedSubscription[], EncodedEntries, number, number[], Array<[number, number]>, number, EncodedSessionExpiry?]>;
  retained: RetainedValue[];
  exchanges: ExchangeState[];
  /** The trailing arguments element is present only for a queue declared with arguments (older snapshots have none). */
  queues: Array<[string, boolean, EncodedEntries, number, number, QueueArguments?]>;
  bindings: BindingState[];
  collections: EncodedCollection[];
  /** Shared-subscription groups: name, persistent members, entries, nextSeq, dropped (absent in snapshots written before groups existed). */
  groups?: Array<[string, string[], EncodedEntries, number, number]>;
}

/** `columns`: whether the caller serializes the result before the state changes again (Broker.snapshot); packed columns are copies either way. */
export function encodeState(state: BrokerState, columns: 'copies' | 'views' = 'copies'): EncodedState {
  const sessions = [...state.sessions.values()].map((s) => [
    s.clientId, encodeSubscriptions(s), encodeEntries(s, columns), s.nextSeq, [...s.rx2], [...s.rel], s.dropped,
    // MQTT 5 expiry, only when set: snapshots of 3.1.1 sessions keep their old shape.
    ...(s.expiryInterval === undefined && s.expiresAt === undefined && s.will === undefined ? [] : [sessionExpiryOf(s)]),
  ] as EncodedState['sessions'][number]);
  const queues = [...state.queues.values()].map((q) => [
    q.name, q.autoDelete, encodeEntries(q, columns), q.nextSeq, q.dropped, ...(q.arguments === undefined ? [] : [{ ...q.arguments }]),
  ] as EncodedState['queues'][number]);
  return {
    v: snapshotFormatVersion,
    lastLsn: state.lastLsn,
    lastTimestamp: state.lastTimestamp,
    sessions,
    retained: [...state.retained.values()].map((r) => ({ ...r, payload: toBytes(r.payload) })),
    exchanges: [...state.exchanges.values()].map((e) => ({ ...e })),
    queues,
    bindings: [...state.bindings.values()].map((b) => ({ ...b })),
    collections: encodeCollections(state.collections),
    groups: [...state.groups.values()].map((g) => [g.name, [...g.members], encodeEntries(g, columns), g.nextSeq, g.dropped]),
  };
}

function encodeEntries(destination: DestinationState, columns: 'copies' | 'views'): EncodedEntries {
  const c = columns === 'views' ? destination.pending.columnViews() : destination.pending.columns();
  const held = [...destination.pending.heldEntries()].map(([seq, m]) => [seq, normalizedMessage(m)] as [number, StoredMessage]);
  return [...packColumns(c, c.seqs.length), held];
}

/** Room for half as many entries again: the queue grows into it after a restart without copying its columns. */
const roomToGrow = (count: number): number => (count >> 1) + 8;

function decodeEntries(encoded: EncodedEntries): EntryQueue<StoredMessage> {
  const [seqs, lsns, sizes, deliveries, flags, held] = encoded;
  const { columns, count } = unpackColumns([seqs, lsns, sizes, deliveries, flags], roomToGrow);
  return EntryQueue.fromColumns(columns, new Map(held), count);
}

/** Version 2 columns: the raw little-endian bytes of each typed array. */
function decodeVersion2Entries(encoded: EncodedEntries): EntryQueue<StoredMessage> {
  const [seqBytes, lsnBytes, sizeBytes, deliveryBytes, flagBytes, held] = encoded;
  const count = seqBytes.byteLength / Float64Array.BYTES_PER_ELEMENT;
  const expected = [count * Float64Array.BYTES_PER_ELEMENT, count * Uint32Array.BYTES_PER_ELEMENT, count * Uint32Array.BYTES_PER_ELEMENT, count];
  if (!Number.isInteger(count) || ![lsnBytes, sizeBytes, deliveryBytes, flagBytes].every((bytes, i) => bytes.byteLength === expected[i])) {
    throw new Error('snapshot is inconsistent: entry columns differ in length');
  }
  // One copy each, into arrays with room to grow (the copy also aligns them: decoded binaries are views at any offset).
  const capacity = count + roomToGrow(count);
  const columns = {
    seqs: copyInto(new Float64Array(capacity), seqBytes),
    lsns: copyInto(new Float64Array(capacity), lsnBytes),
    sizes: copyInto(new Uint32Array(capacity), sizeBytes),
    deliveries: copyInto(new Uint32Array(capacity), deliveryBytes),
    flags: copyInto(new Uint8Array(capacity), flagBytes),
  };
  return EntryQueue.fromColumns(columns, new Map(held), count);
}

/** `bytes` copied to the start of `target`'s buffer. */
function copyInto<T extends Float64Array | Uint32Array | Uint8Array>(target: T, bytes: Uint8Array): T {
  new Uint8Array(target.buffer, target.byteOffset, bytes.byteLength).set(bytes);
  return target;
}

/** Version 1 pending rows: [seq, lsn, qos, deliveries], their messages inline: held. */
function decodeVersion1Entries(rows: Array<[number, number, 1 | 2, number]>, messages: Map<number, StoredMessage>): EntryQueue<StoredMessage> {
  const queue = new EntryQueue<StoredMessage>();
  for (const [seq, lsn, qos, deliveries] of rows) {
    const message = messages.get(lsn);
    if (!message) throw new Error(`snapshot is inconsistent: pending entry refers to missing message LSN ${lsn}`);
    queue.insert(seq, lsn, message.payload.byteLength, qos === 2 ? 1 : 0, message, deliveries);
  }
  return queue;
}

export function decodeState(encoded: EncodedState): BrokerState {
  if (!readableVersions.includes(encoded.v)) {
    throw new Error(`snapshot format version ${encoded.v} is not supported (this Cairn reads versions ${readableVersions.join(' and ')}): written by a newer Cairn?`);
  }
  const version1 = encoded.v === 1 ? new Map((encoded as unknown as { messages: StoredMessage[] }).messages.map((m) => [m.lsn, m])) : undefined;
  const entriesOf = (entries: unknown): EntryQueue<StoredMessage> => (version1 !== undefined
    ? decodeVersion1Entries(entries as Array<[number, number, 1 | 2, number]>, version1)
    : encoded.v === 2 ? decodeVersion2Entries(entries as EncodedEntries) : decodeEntries(entries as EncodedEntries));
  const sessions = new Map<string, SessionState>();
  for (const [clientId, subs, entries, nextSeq, rx2, rel, dropped, expiry] of encoded.sessions) {
    sessions.set(clientId, {
      clientId, subscriptions: new Map(subs.map(([filter, qos]) => [filter, qos])), subscriptionOptions: decodeSubscriptionOptions(subs), pending: entriesOf(entries), nextSeq, rx2: new Set(rx2), rel: new Map(rel), dropped,
      ...(expiry?.e === undefined ? {} : { expiryInterval: expiry.e }), ...(expiry?.until === undefined ? {} : { expiresAt: expiry.until }),
      ...(expiry?.w === undefined ? {} : { will: pendingWillOf(expiry.w) }),
    });
  }
  const queues = new Map<string, QueueState>();
  for (const [name, autoDelete, entries, nextSeq, dropped, args] of encoded.queues) {
    queues.set(name, { name, autoDelete, pending: entriesOf(entries), nextSeq, dropped, ...(args === undefined ? {} : { arguments: args }) });
  }
  const groups = new Map<string, GroupState>();
  for (const [name, members, entries, nextSeq, dropped] of encoded.groups ?? []) {
    groups.set(name, { name, members: new Set(members), pending: entriesOf(entries), nextSeq, dropped });
  }
  return {
    sessions,
    groups,
    retained: new Map(encoded.retained.map((r) => [r.topic, r])),
    exchanges: new Map(encoded.exchanges.map((e) => [e.name, e])),
    queues,
    bindings: new Map(encoded.bindings.map((b) => [bindingKey(b), b])),
    collections: decodeCollections(encoded.collections),
    lastLsn: encoded.lastLsn,
    lastTimestamp: encoded.lastTimestamp,
  };
}

function normalizedMessage(message: StoredMessage): StoredMessage {
  return { ...message, payload: toBytes(message.payload), ...(message.properties ? { properties: toBytes(message.properties) } : {}) };
}


/** Buffers and Uint8Arrays compare and encode alike once normalized. */
function toBytes(bytes: Uint8Array): Uint8Array {
  return Buffer.isBuffer(bytes) ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : bytes;
}
