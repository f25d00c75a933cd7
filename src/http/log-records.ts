/**
 * The live log through the HTTP API, with the inspector's own vocabulary:
 * - GET /api/log/records?kind=&topic=&client=&queue=&from=&to=&since=&until=&limit=
 *   the newest records that pass the filters (`cairn inspect records`'s), in
 *   LSN order, each as {lsn, time, timestamp, kind, summary};
 * - GET /api/log/trace?lsn=N — the life of the message at LSN N
 *   (`cairn inspect trace --lsn N --json`): where it was routed and, for each
 *   destination, its delivery, ack, drop or discard.
 *
 * Both read the log synchronously inside one request, so both are bounded:
 * records look at most `recordsScanMax` records back from the end (unless
 * `from` says where to start) and a trace reads at most `traceScanRecordsMax`
 * records after the message. Only durable records are read.
 */
import type { Broker } from '../core/broker.js';
import { UsageError, type ParsedFlags } from '../inspect/args.js';
import { filterFlags, matches, pastEnd, parseFilter } from '../inspect/filter.js';
import { isoTime, kindLabel, summarize } from '../inspect/format.js';
import { traceJson, traceMessages, type TracedRecord } from '../inspect/trace.js';
import { badRequest, notFound } from './http-error.js';
import { checkParameters } from './management/listing.js';
import { logPositionOf } from './log-position.js';

export const recordsScanMax = 50_000;
export const recordsLimitDefault = 100;
export const recordsLimitMax = 1_000;
export const traceScanRecordsMax = 1_000_000;

function* durableRecords(broker: Broker, fromLsn: number, countMax: number): Iterable<TracedRecord> {
  const { durableLsn } = logPositionOf(broker.log);
  let count = 0;
  for (const record of broker.log.read({ lsn: fromLsn })) {
    if (record.lsn > durableLsn || count++ >= countMax) return;
    yield record;
  }
}

function flagsOf(url: URL): ParsedFlags {
  return { strings: new Map(url.searchParams), booleans: new Set() };
}

/** The inspector's UsageError is the API's 400. */
function asBadRequest<T>(run: () => T): T {
  try {
    return run();
  } catch (error: unknown) {
    if (error instanceof UsageError) throw badRequest(error.message.replace(/--/g, ''));
    throw error;
  }
}

export function recentRecords(broker: Broker, url: URL): unknown[] {
  checkParameters(url, filterFlags.map((flag) => flag.name));
  const filter = asBadRequest(() => parseFilter(flagsOf(url), Date.now()));
  const limit = filter.limit ?? recordsLimitDefault;
  if (limit > recordsLimitMax) throw badRequest(`limit must be at most ${recordsLimitMax}, got ${limit}`);
  const { firstLsn, nextLsn } = logPositionOf(broker.log);
  const from = filter.fromLsn ?? Math.max(firstLsn, nextLsn - recordsScanMax);
  const kept: TracedRecord[] = [];
  for (const record of durableRecords(broker, Math.max(from, firstLsn), recordsScanMax)) {
    if (pastEnd(filter, record)) break;
    if (!matches(filter, record)) continue;
    kept.push(record);
    if (kept.length > limit) kept.shift();
  }
  return kept.map((record) => ({ lsn: record.lsn, time: isoTime(record.timestamp), timestamp: record.timestamp, kind: kindLabel(record.kind), summary: summarize(record.kind, record.body) }));
}

export function traceOf(broker: Broker, url: URL): unknown {
  checkParameters(url, ['lsn']);
  const text = url.searchParams.get('lsn') ?? '';
  const lsn = /^\d+$/.test(text) ? Number(text) : NaN;
  const { firstLsn, durableLsn } = logPositionOf(broker.log);
  if (!Number.isSafeInteger(lsn) || lsn < firstLsn || lsn > durableLsn) throw badRequest(`lsn must be a durable LSN in the log (${firstLsn}..${durableLsn}), got '${text}'`);
  const [trace] = traceMessages((start) => durableRecords(broker, start.lsn ?? lsn, traceScanRecordsMax), { by: 'lsn', lsn }, 1);
  if (trace === undefined) throw notFound(`the record at LSN ${lsn} is not a msg record: a trace follows a message`);
  return traceJson(trace);
}
