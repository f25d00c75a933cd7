/**
 * What pins the log of a data directory, offline: the oldest live message in
 * the state at the log's end (the state start-up would rebuild), described by
 * log-pin-report.ts with the timestamp of its record read from the segment.
 */
import { AssertionError } from '../assert.js';
import { describeLogPin, type LogPinReport } from '../log-pin-report.js';
import { oldestLiveMessage } from '../projections/pins.js';
import { UsageError } from './args.js';
import type { InspectIo } from './progress.js';
import { projectState } from './project.js';
import type { LogSource } from './source.js';

/** The pin, or why it cannot be known (no state can be rebuilt from this directory). */
export function logPinOf(source: LogSource, io: InspectIo, now: number): { pin: LogPinReport | undefined } | { unknown: string } {
  let projected: ReturnType<typeof projectState>;
  try {
    projected = projectState(source, source.lastLsn, io);
  } catch (error) {
    if (error instanceof UsageError) return { unknown: error.message };
    throw error;
  }
  return { pin: describeLogPin(oldestLiveMessage(projected.state), source.reader.segments(), (lsn) => timestampAt(source, lsn), now) };
}

function timestampAt(source: LogSource, lsn: number): number | undefined {
  try {
    for (const record of source.reader.read({ lsn })) return record.lsn === lsn ? record.timestamp : undefined;
  } catch (error) {
    if (error instanceof AssertionError) throw error;
    // A damaged record: its time is unknown (`cairn inspect verify` says why).
  }
  return undefined;
}
