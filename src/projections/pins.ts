/**
 * What pins the log: the oldest record that a live message still needs.
 * Queued messages are references into the log (their payload is read back
 * from the segment on delivery), so retention must keep every segment from
 * the oldest live message's LSN on. Within one destination, seq order is LSN
 * order (a msg record takes its seqs when it is appended), so the oldest
 * entry of each destination is its first one. Documents are references too
 * (collections.ts), never removed: a collection pins the log from its first
 * document's record on, which is its map's first entry.
 */
import type { BrokerState } from './state.js';

export type PinHolder =
  | { readonly kind: 'session'; readonly client: string; readonly seq: number }
  | { readonly kind: 'queue'; readonly queue: string; readonly seq: number }
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
    const first = session.pending.first();
    if (first && first.held === undefined && (oldest === undefined || first.lsn < oldest.lsn)) oldest = { lsn: first.lsn, holder: { kind: 'session', client: session.clientId, seq: first.seq } };
  }
  for (const queue of state.queues.values()) {
    const first = queue.pending.first();
    if (first && first.held === undefined && (oldest === undefined || first.lsn < oldest.lsn)) oldest = { lsn: first.lsn, holder: { kind: 'queue', queue: queue.name, seq: first.seq } };
  }
  for (const collection of state.collections.values()) {
    for (const [id, lsn] of collection.documents) {
      if (oldest === undefined || lsn < oldest.lsn) oldest = { lsn, holder: { kind: 'collection', collection: collection.name, id } };
      break;
    }
  }
  return oldest;
}
