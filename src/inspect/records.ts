/**
 * `cairn inspect records`: the log as a table or as JSON lines, filtered, and
 * optionally followed as the broker appends.
 *
 * Table:  LSN  ISO time  kind  one-line summary
 * --json: one object per line: {"lsn","time","timestamp","kind","size","body"}
 *         where byte fields in body are {"utf8": …} or {"base64": …} (format.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { LogRecord } from '../log/index.js';
import { dataFlag, jsonFlag, requiredString, UsageError, type CommandSpec, type ParsedFlags } from './args.js';
import { filterFlags, matches, parseFilter, pastEnd, readStart, type RecordFilter } from './filter.js';
import { isoTime, kindLabel, summarize, toJsonValue } from './format.js';
import { Progress, type InspectIo } from './progress.js';
import { isJetStreamLocation, openSource, type LogSource } from './source.js';
import { writeLine } from './output.js';

const followPollMs = 250;

export const recordsCommand: CommandSpec = {
  name: 'inspect records',
  summary: 'Prints the log\'s records, filtered: LSN, time, kind and a one-line summary (or JSON lines with --json).',
  flags: [dataFlag, jsonFlag, { name: 'follow', kind: 'boolean', help: 'keep printing records as the broker appends them (Ctrl-C stops)' }, ...filterFlags],
  examples: ["cairn inspect records --data ./data --kind msg --since 2h --topic 'plant/#' --json"],
};

export async function inspectRecords(flags: ParsedFlags, io: InspectIo): Promise<number> {
  const dir = requiredString('inspect records', flags, 'data');
  const filter = parseFilter(flags, Date.now());
  const json = flags.booleans.has('json');
  const print = (record: LogRecord): Promise<void> => writeLine(io.stdout, json ? recordJson(record) : recordRow(record));
  if (flags.booleans.has('follow') && isJetStreamLocation(dir)) throw new UsageError('--follow reads a data directory; on a JetStream log, run the command again with --from N (or follow the stream with the nats CLI)');
  let source = await openSource(dir);
  let state = { printed: 0, nextLsn: filter.fromLsn ?? source.firstLsn, done: false };
  state = await printRange(source, filter, { lsn: undefined }, state, print, io);
  if (!flags.booleans.has('follow')) return 0;
  // Follow: reopen the reader (it sees the files as they were when opened) and print what was appended since.
  while (!state.done && !isAborted(io)) {
    await sleep(followPollMs, undefined, io.signal ? { signal: io.signal } : {}).catch(() => undefined);
    if (isAborted(io)) break;
    source = await openSource(dir);
    if (source.lastLsn >= state.nextLsn) state = await printRange(source, filter, { lsn: state.nextLsn }, state, print, io);
  }
  return 0;
}

function isAborted(io: InspectIo): boolean {
  return io.signal?.aborted === true;
}

interface ScanState { printed: number; nextLsn: number; done: boolean }

async function printRange(
  source: LogSource, filter: RecordFilter, resume: { lsn: number | undefined }, state: ScanState,
  print: (record: LogRecord) => Promise<void>, io: InspectIo,
): Promise<ScanState> {
  const start = resume.lsn !== undefined ? { lsn: resume.lsn } : readStart(filter);
  const progress = new Progress(io, 'records', source.lastLsn - (start.lsn ?? source.firstLsn) + 1);
  let { printed, nextLsn } = state;
  try {
    for (const record of source.reader.read(start)) {
      progress.tick();
      nextLsn = record.lsn + 1;
      if (pastEnd(filter, record)) return { printed, nextLsn, done: true };
      if (!matches(filter, record)) continue;
      await print(record);
      printed++;
      if (filter.limit !== undefined && printed >= filter.limit) return { printed, nextLsn, done: true };
    }
  } finally {
    progress.finish();
  }
  return { printed, nextLsn, done: false };
}

export function recordRow(record: LogRecord): string {
  return `${String(record.lsn).padStart(8)}  ${isoTime(record.timestamp)}  ${kindLabel(record.kind).padEnd(8)}  ${summarize(record.kind, record.body)}`;
}

export function recordJson(record: LogRecord): string {
  return JSON.stringify({ lsn: record.lsn, time: isoTime(record.timestamp), timestamp: record.timestamp, kind: kindLabel(record.kind), size: record.size, body: toJsonValue(record.body) });
}
