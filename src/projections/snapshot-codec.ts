/**
 * Broker state ⇄ a plain, MessagePack-friendly value, for snapshot files and
 * for comparing states in tests (two states are equal iff their encodings are).
 *
 * Layout (version 1): messages are written once, keyed by the LSN of their msg
 * record, and pending entries refer to them by LSN, so a payload shared by
 * many destinations stays shared after a restore. Map order is kept (seq
 * order for pending entries), so a restored state iterates like the original.
 */
import { decodeCollections, encodeCollections, type EncodedCollection } from './collections.js';
import { bindingKey } from './state.js';
import type {
  BindingState, BrokerState, ExchangeState, PendingEntry, QueueState, RetainedValue, SessionState, StoredMessage,
} from './state.js';

export const snapshotFormatVersion = 1;

type PendingRow = [seq: number, lsn: number, qos: 1 | 2, deliveries: number];

export interface EncodedState {
  v: number;
  lastLsn: number;
  lastTimestamp: number;
  messages: StoredMessage[];
  sessions: Array<[string, Array<[string, 0 | 1 | 2]>, PendingRow[], number, number[], Array<[number, number]>, number]>;
  retained: RetainedValue[];
  exchanges: ExchangeState[];
  queues: Array<[string, boolean, PendingRow[], number, number]>;
  bindings: BindingState[];
  collections: EncodedCollection[];
}

export function encodeState(state: BrokerState): EncodedState {
  const messages = new Map<number, StoredMessage>();
  const rows = (pending: Map<number, PendingEntry>): PendingRow[] => {
    const out: PendingRow[] = [];
    for (const [seq, entry] of pending) {
      messages.set(entry.message.lsn, entry.message);
      out.push([seq, entry.message.lsn, entry.qos, entry.deliveries]);
    }
    return out;
  };
  const sessions = [...state.sessions.values()].map((s) => [
    s.clientId, [...s.subscriptions], rows(s.pending), s.nextSeq, [...s.rx2], [...s.rel], s.dropped,
  ] as EncodedState['sessions'][number]);
  const queues = [...state.queues.values()].map((q) => [q.name, q.autoDelete, rows(q.pending), q.nextSeq, q.dropped] as EncodedState['queues'][number]);
  return {
    v: snapshotFormatVersion,
    lastLsn: state.lastLsn,
    lastTimestamp: state.lastTimestamp,
    messages: [...messages.values()].sort((a, b) => a.lsn - b.lsn).map((m) => ({ ...m, payload: toBytes(m.payload), ...(m.properties ? { properties: toBytes(m.properties) } : {}) })),
    sessions,
    retained: [...state.retained.values()].map((r) => ({ ...r, payload: toBytes(r.payload) })),
    exchanges: [...state.exchanges.values()].map((e) => ({ ...e })),
    queues,
    bindings: [...state.bindings.values()].map((b) => ({ ...b })),
    collections: encodeCollections(state.collections),
  };
}

export function decodeState(encoded: EncodedState): BrokerState {
  if (encoded.v !== snapshotFormatVersion) throw new Error(`snapshot format version ${encoded.v} is not supported (this Cairn reads version ${snapshotFormatVersion})`);
  const messages = new Map(encoded.messages.map((m) => [m.lsn, m]));
  const pendingOf = (rows: PendingRow[]): Map<number, PendingEntry> => {
    const pending = new Map<number, PendingEntry>();
    for (const [seq, lsn, qos, deliveries] of rows) {
      const message = messages.get(lsn);
      if (!message) throw new Error(`snapshot is inconsistent: pending entry refers to missing message LSN ${lsn}`);
      pending.set(seq, { message, qos, deliveries });
    }
    return pending;
  };
  const sessions = new Map<string, SessionState>();
  for (const [clientId, subs, rows, nextSeq, rx2, rel, dropped] of encoded.sessions) {
    sessions.set(clientId, { clientId, subscriptions: new Map(subs), pending: pendingOf(rows), nextSeq, rx2: new Set(rx2), rel: new Map(rel), dropped });
  }
  const queues = new Map<string, QueueState>();
  for (const [name, autoDelete, rows, nextSeq, dropped] of encoded.queues) {
    queues.set(name, { name, autoDelete, pending: pendingOf(rows), nextSeq, dropped });
  }
  return {
    sessions,
    retained: new Map(encoded.retained.map((r) => [r.topic, r])),
    exchanges: new Map(encoded.exchanges.map((e) => [e.name, e])),
    queues,
    bindings: new Map(encoded.bindings.map((b) => [bindingKey(b.exchange, b.queue, b.routingKey), b])),
    collections: decodeCollections(encoded.collections),
    lastLsn: encoded.lastLsn,
    lastTimestamp: encoded.lastTimestamp,
  };
}

/** Buffers and Uint8Arrays compare and encode alike once normalized. */
function toBytes(bytes: Uint8Array): Uint8Array {
  return Buffer.isBuffer(bytes) ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : bytes;
}
