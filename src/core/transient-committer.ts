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
import { destinationOf, markDelivered, removeFinished } from '../projections/destinations.js';
import { RecordKind, type BrokerRecord, type DestinationRef, type MsgBody } from '../projections/records.js';
import { initialState, type BrokerState, type StoredMessage } from '../projections/state.js';
import type { DestinationCommitter, PendingRecord, SettleKind } from './committer.js';

export class TransientCommitter implements DestinationCommitter {
  readonly durable = false;
  /** The transient destinations' state, as the broker's state holds the durable ones'; LSNs count its own records. */
  readonly state: BrokerState = initialState();
  /** Reused for each delivery or ack: the leaves read only its seqs. */
  private readonly settled = { c: '', s: [0] };

  constructor(private readonly clock: () => number) {}

  /** `message`: the message of the msg record among them, when the caller has it already (else made from the record). */
  commit(records: readonly PendingRecord[], message?: StoredMessage): undefined {
    const timestamp = this.clock();
    for (let i = 0; i < records.length; i++) {
      const { kind, body } = records[i]!;
      const stamped = { lsn: this.state.lastLsn + 1, timestamp, kind, body } as BrokerRecord;
      apply(this.state, stamped, kind === RecordKind.msg ? message ?? storedMessageOf(body as MsgBody, stamped.lsn, timestamp) : undefined);
    }
    return undefined;
  }

  commitQuietly(records: readonly PendingRecord[]): void {
    this.commit(records);
  }

  settleLater(kind: SettleKind, ref: DestinationRef, seq: number): void {
    const destination = destinationOf(this.state, ref);
    if (destination === undefined) return;
    this.settled.s[0] = seq;
    if (kind === 'ack') removeFinished(destination, this.settled);
    else markDelivered(destination, this.settled);
  }
}
