/**
 * The committer of transient destinations (clean MQTT sessions): their
 * changes are the records a persistent session's are, applied by the same
 * fold (projections/apply.ts) to a state of their own and written nowhere.
 * So a clean session runs the same code as a persistent one, and none of its
 * messages ever reaches the log. Nothing waits: commit returns undefined.
 *
 * A msg record's entries hold their message (no log to read it back from).
 * Deliveries and acks apply at once (the log's Committer coalesces them only
 * to write fewer records), through the same leaves as their records.
 */
import { apply, storedMessageOf } from '../projections/apply.js';
import { destinationOf, enqueueRows, markDelivered, removeFinished } from '../projections/destinations.js';
import { RecordKind, type BrokerRecord, type DestinationRef, type MsgBody } from '../projections/records.js';
import { initialState, type BrokerState, type StoredMessage } from '../projections/state.js';
import type { DestinationCommitter, PendingRecord, SettleKind } from './committer.js';
import type { SessionRow } from './publish.js';

export class TransientCommitter implements DestinationCommitter {
  readonly durable = false;
  /** The transient destinations' state, as the broker's state holds the durable ones'; LSNs count its own records. */
  readonly state: BrokerState = initialState();
  /** Reused for each delivery or ack: the leaves read only its seqs. */
  private readonly settled = { c: '', s: [0] };

  constructor(private readonly clock: () => number) {}

  commit(records: readonly PendingRecord[]): undefined {
    const timestamp = this.clock();
    for (let i = 0; i < records.length; i++) {
      const { kind, body } = records[i]!;
      const stamped = { lsn: this.state.lastLsn + 1, timestamp, kind, body } as BrokerRecord;
      apply(this.state, stamped, kind === RecordKind.msg ? storedMessageOf(body as MsgBody, stamped.lsn, timestamp) : undefined);
    }
    return undefined;
  }

  commitQuietly(records: readonly PendingRecord[]): void {
    this.commit(records);
  }

  /**
   * What a msg record listing `rows` does when applied, its message held by the entries: for a
   * publish, without building the record (it goes nowhere, and this runs for every message).
   */
  enqueue(rows: readonly SessionRow[], message: StoredMessage): void {
    enqueueRows(this.state.sessions, rows, 0, message.payload.byteLength, message);
  }

  settleLater(kind: SettleKind, ref: DestinationRef, seq: number): void {
    const destination = destinationOf(this.state, ref);
    if (destination === undefined) return;
    this.settled.s[0] = seq;
    if (kind === 'ack') removeFinished(destination, this.settled);
    else markDelivered(destination, this.settled);
  }
}
