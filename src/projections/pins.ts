/**
 * What pins the log: the oldest record that a live message still needs.
 * Queued messages are references into the log (their payload is read back
 * from the segment on delivery), so retention must keep every segment from
 * the oldest live message's LSN on. Documents are references too
 * (collections.ts), never removed; a collection's map is in LSN order (a moved
 * document goes to its end), so its first entry is its oldest. A moved message
 * (segment-release.ts) keeps its seq under a newer LSN, so a destination's
 * oldest entry is not always its first (EntryQueue.oldestInLog looks past
 * the moved ones).
 */
import type { BrokerState } from './state.js';

export type PinHolder =
  | { readonly kind: 'session'; readonly client: string; readonly seq: number }
  | { readonly kind: 'queue'; readonly queue: string; readonly seq: number }
  | { readonly kind: 'group'; readonly group: string; readonly seq: number }
  | { readonly kind: 'collection'; readonly collection: string; readonly id: number };

export interface LogPin {
  /** The oldest LSN retention must keep. */
  readonly lsn: number;
  readonly holder: PinHolder;
}

/** The oldest live reference in the state (a queued message or a document), or undefined when there is none. */
export function oldestLiveMessage(state: BrokerState): LogPin | undefined {
  let oldest: LogPin | undefined;
  // An entry held in memory (from an old snapshot) needs no segment.
  for (const session of state.sessions.values()) {
    const entry = session.pending.oldestInLog();
    if (entry && (oldest === undefined || entry.lsn < oldest.lsn)) oldest = { lsn: entry.lsn, holder: { kind: 'session', client: session.clientId, seq: entry.seq } };
  }
  for (const queue of state.queues.values()) {
    const entry = queue.pending.oldestInLog();
    if (entry && (oldest === undefined || entry.lsn < oldest.lsn)) oldest = { lsn: entry.lsn, holder: { kind: 'queue', queue: queue.name, seq: entry.seq } };
  }
  for (const group of state.groups.values()) {
    const entry = group.pending.oldestInLog();
    if (entry && (oldest === undefined || entry.lsn < oldest.lsn)) oldest = { lsn: entry.lsn, holder: { kind: 'group', group: group.name, seq: entry.seq } };
  }
  for (const collection of state.collections.values()) {
    for (const [id, lsn] of collection.documents) {
      if (oldest === undefined || lsn < oldest.lsn) oldest = { lsn, holder: { kind: 'collection', collection: collection.name, id } };
      break;
    }
  }
  return oldest;
}
