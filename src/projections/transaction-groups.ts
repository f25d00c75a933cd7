/**
 * Replay of transaction groups: an AMQP transaction's records are written as
 * one group,
 *
 *   tx{op: begin}  r1  r2 … rn  tx{op: commit}
 *
 * contiguous in the log (nothing else is appended between, core/committer.ts),
 * and replay applies r1…rn only when it reaches the commit record: all or
 * nothing. A crash can cut a group anywhere — a torn tail in the file log, a
 * record the JetStream log never acknowledged — and the records of a group
 * whose commit never reached the log are not applied. Start-up then writes
 * tx{op: abort} at once (core/broker.ts), so that the records it appends
 * afterwards are not taken for the rest of the torn group.
 *
 * Why markers, and not one record holding the whole transaction: a queued
 * message is referenced by the LSN of its own msg record (entry-queue.ts,
 * message-store.ts), so each publish of a transaction must stay a msg record
 * of its own; and why markers, and not the file log's batching: the file log
 * writes a batch with one write() but a power loss may keep any prefix of it,
 * and the JetStream log has no atomic multi-record append at all.
 *
 * Live, the committer applies each record of a group as it appends it; the
 * group is appended within one synchronous call, so no command sees the state
 * between r1 and rn, and the state after the commit record is the same as
 * replay's. Pure: a fold over records, like apply.
 */
import { apply } from './apply.js';
import { RecordKind, type BrokerRecord, type TxBody } from './records.js';
import type { BrokerState } from './state.js';

export class GroupedReplay {
  /** The records of the group being read, after its begin record; undefined outside a group. */
  private open: BrokerRecord[] | undefined = undefined;
  private openedAt = 0;

  constructor(private readonly state: BrokerState) {}

  /** Applies `record` now, or when its group's commit is read; drops a group that an abort or a new begin shows was torn. */
  feed(record: BrokerRecord): void {
    if (record.kind !== RecordKind.tx) {
      if (this.open === undefined) apply(this.state, record);
      else this.open.push(record);
      return;
    }
    const { op } = record.body as TxBody;
    const group = this.open;
    this.open = undefined;
    // A commit applies the group's records, then itself (its LSN comes after theirs).
    if (op === 'commit' && group !== undefined) for (const member of group) apply(this.state, member);
    apply(this.state, record);
    if (op === 'begin') {
      this.open = [];
      this.openedAt = record.lsn;
    }
  }

  /** The group replay ended inside (its begin record's LSN and the records read after it), if any: torn. */
  get torn(): { readonly beginLsn: number; readonly records: number } | undefined {
    return this.open === undefined ? undefined : { beginLsn: this.openedAt, records: this.open.length };
  }
}

/** Replays `records` onto `state` with transaction groups applied whole or not at all; returns the torn group at the end, if any. */
export function replayGrouped(state: BrokerState, records: Iterable<BrokerRecord>): GroupedReplay {
  const replay = new GroupedReplay(state);
  for (const record of records) replay.feed(record);
  return replay;
}
