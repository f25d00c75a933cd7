/**
 * Opening a log for inspection — a data directory, or a JetStream log's
 * address (`nats://host:4222/stream`, credentials from CAIRN_NATS_CREDS, as
 * `cairn serve --log` takes them) — with the errors an operator can cause
 * turned into UsageErrors, and the range of LSNs it still holds.
 */
import * as fs from 'node:fs';
import { LogError, openLogReader, type LogReader } from '../log/index.js';
import { parseJetStreamAddress } from '../log/jetstream/jetstream-address.js';
import { UsageError } from './args.js';

export interface LogSource {
  readonly reader: LogReader;
  /** The oldest retained LSN (after retention). */
  readonly firstLsn: number;
  /** The newest readable LSN (before a torn tail, if any); firstLsn - 1 when the log holds no record. */
  readonly lastLsn: number;
}

/** A JetStream log's address rather than a directory. */
export function isJetStreamLocation(location: string): boolean {
  return /^(nats|tls):\/\//.test(location);
}

export async function openSource(location: string): Promise<LogSource> {
  if (isJetStreamLocation(location)) return sourceOf(await openJetStreamSource(location));
  return sourceOf(openDirectory(location));
}

async function openJetStreamSource(location: string): Promise<LogReader> {
  try {
    // The NATS client loads only for a JetStream log: the broker imports this module (for the HTTP trace) and
    // would otherwise load it at every start.
    const { openJetStreamLogReader } = await import('../log/jetstream/stream-log-reader.js');
    return await openJetStreamLogReader(parseJetStreamAddress(location), { credsFile: process.env['CAIRN_NATS_CREDS'] });
  } catch (error) {
    if (error instanceof LogError) throw new UsageError(`cannot read the log at ${location}: ${error.message}`);
    throw error;
  }
}

function sourceOf(reader: LogReader): LogSource {
  const segments = reader.segments();
  return { reader, firstLsn: segments[0]!.firstLsn, lastLsn: segments[segments.length - 1]!.lastLsn };
}

function openDirectory(dir: string): LogReader {
  if (!fs.existsSync(dir)) throw new UsageError(`no data directory at ${dir}`);
  if (!fs.statSync(dir).isDirectory()) throw new UsageError(`${dir} is not a directory`);
  try {
    return openLogReader(dir);
  } catch (error) {
    if (error instanceof LogError) throw new UsageError(`cannot read the log in ${dir}: ${error.message}`);
    throw error;
  }
}

export function describeRange(source: LogSource): string {
  if (source.lastLsn < source.firstLsn) return `the log holds no record (next LSN ${source.firstLsn})`;
  const removed = source.firstLsn > 1 ? `; LSN 1..${source.firstLsn - 1} were removed by retention (or moved to the archive directory, when one is configured)` : '';
  return `the log holds LSN ${source.firstLsn}..${source.lastLsn}${removed}`;
}

/**
 * The LSN of the last record at or before `time`: the record just before the
 * first one stamped later than `time` (replay order is LSN order even if the
 * wall clock stepped back). Undefined when the first retained record is already later.
 */
export function lsnAtTime(source: LogSource, time: number): number | undefined {
  for (const record of source.reader.read({ time })) {
    if (record.timestamp > time) return record.lsn - 1 >= source.firstLsn ? record.lsn - 1 : undefined;
  }
  return source.lastLsn >= source.firstLsn ? source.lastLsn : undefined;
}
