/**
 * What pins the log, for operators: the oldest message still queued (its
 * destination and seq), the LSN it sits at, the segment holding it, its age,
 * and how much log it holds. Retention never removes a segment holding a live
 * message (src/log/retention.ts), so this is the message to look at when the
 * log does not shrink. One description, shared by `cairn inspect stats`
 * (offline, from the projected state) and /metrics (live).
 *
 * Pinned bytes: the bytes of the segment holding the pinned LSN and of every
 * newer segment — the least the log can shrink to while that message stays
 * queued, whatever the retention settings. (Compare with the log's bytes: the
 * difference is what retention may still remove.)
 *
 * A collection's first document pins the log too (documents stay in the log,
 * projections/collections.ts): its holder is reported as destination type
 * 'collection', with the document id in place of a seq.
 */
import type { SegmentInfo } from './log/index.js';
import type { LogPin, PinHolder } from './projections/pins.js';

export interface LogPinReport {
  /** An MQTT persistent session (by client id), an AMQP durable queue, an MQTT shared-subscription group or a document collection (by name). */
  readonly destinationType: 'session' | 'queue' | 'group' | 'collection';
  readonly destination: string;
  /** The message's seq in its destination; for a collection, the document id. */
  readonly seq: number;
  readonly lsn: number;
  /** The segment file holding the LSN; undefined when the log no longer holds it. */
  readonly segment: string | undefined;
  /** The record's timestamp (ms); undefined when it cannot be read. */
  readonly timestamp: number | undefined;
  readonly ageSeconds: number | undefined;
  readonly pinnedBytes: number;
}

/** `timestampAt(lsn)`: the timestamp of the record at `lsn`, or undefined when it cannot be read. */
export function describeLogPin(pin: LogPin | undefined, segments: readonly SegmentInfo[], timestampAt: (lsn: number) => number | undefined, now: number): LogPinReport | undefined {
  if (pin === undefined) return undefined;
  const holder = holderOf(pin.holder);
  const segment = segments.find((s) => s.firstLsn <= pin.lsn && pin.lsn <= s.lastLsn)?.file;
  const timestamp = segment === undefined ? undefined : timestampAt(pin.lsn);
  const pinnedBytes = segments.filter((s) => s.lastLsn >= pin.lsn).reduce((sum, s) => sum + s.bytes, 0);
  return { ...holder, lsn: pin.lsn, segment, timestamp, ageSeconds: timestamp === undefined ? undefined : Math.max(0, now - timestamp) / 1000, pinnedBytes };
}

function holderOf(holder: PinHolder): Pick<LogPinReport, 'destinationType' | 'destination' | 'seq'> {
  switch (holder.kind) {
    case 'session': return { destinationType: 'session', destination: holder.client, seq: holder.seq };
    case 'queue': return { destinationType: 'queue', destination: holder.queue, seq: holder.seq };
    case 'group': return { destinationType: 'group', destination: holder.group, seq: holder.seq };
    case 'collection': return { destinationType: 'collection', destination: holder.collection, seq: holder.id };
  }
}

/** One line for people. */
export function describeLogPinLine(report: LogPinReport | undefined): string {
  if (report === undefined) return 'oldest live message: none (nothing queued pins the log)';
  const where = report.segment === undefined ? 'no longer in the log' : `segment ${report.segment}`;
  const when = report.timestamp === undefined ? 'time unknown' : `${new Date(report.timestamp).toISOString()}, age ${report.ageSeconds!.toFixed(1)} s`;
  return `oldest live message: ${report.destinationType} ${JSON.stringify(report.destination)} ${report.destinationType === 'collection' ? 'document' : 'seq'} ${report.seq}, LSN ${report.lsn} (${where}; ${when}); pins ${report.pinnedBytes} bytes of log from its segment on`;
}
