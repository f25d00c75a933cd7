/**
 * The live log through the HTTP API, with the inspector's own vocabulary:
 * - GET /api/log/records?kind=&topic=&client=&queue=&from=&to=&since=&until=&limit=
 *   the newest records that pass the filters (`cairn inspect records`'s), in
 *   LSN order, each as {lsn, time, timestamp, kind, summary};
 * - GET /api/log/trace?lsn=N — the life of the message at LSN N
 *   (`cairn inspect trace --lsn N --json`): where it was routed and, for each
 *   destination, its delivery, ack, drop or discard.
 *
 * Both read the durable records with one log iterator, in chunks between
 * which other clients are served (chunked-scan.ts; issue 15: a trace over a
 * large log blocked every client while it ran), and both are bounded
 * (HttpLimits): records examines at most `logRecordsExaminedMax` records
 * (without `from`, the newest that many), a trace at most
 * `traceRecordsExaminedMax` from the message on. Each answer says what it
 * examined: `examined`, the LSN range `fromLsn`..`throughLsn`, and
 * `partial: true` with a `reason` when the cap, or retention removing a
 * segment under the read (ESEGMENTGONE), cut the scan short of an answer.
 */
import type { Broker } from '../core/broker.js';
import { UsageError, type ParsedFlags } from '../inspect/args.js';
import { filterFlags, matches, pastEnd, parseFilter } from '../inspect/filter.js';
import { isoTime, kindLabel, summarize } from '../inspect/format.js';
import { MessageTracer, traceJson, type TracedRecord } from '../inspect/trace.js';
import { LogError } from '../log/errors.js';
import { scanInChunks } from './chunked-scan.js';
import { badRequest, HttpError, notFound } from './http-error.js';
import type { HttpLimits } from './limits.js';
import { checkParameters } from './management/listing.js';
import { logPositionOf } from './log-position.js';

export const recordsLimitDefault = 100;
export const recordsLimitMax = 1_000;

export type LogScanLimits = Pick<HttpLimits, 'logRecordsExaminedMax' | 'traceRecordsExaminedMax' | 'logChunkRecords' | 'queryChunkMs'>;

/** What one request read of the log, and whether that was all it needed. */
interface LogScanExtent {
  readonly examined: number;
  /** First and last LSN examined; null when none was. */
  readonly fromLsn: number | null;
  readonly throughLsn: number | null;
  readonly partial: boolean;
  readonly reason?: string;
}

/** The durable records from `fromLsn` on, as of now: one iterator for the whole scan. */
function* durableRecords(broker: Broker, fromLsn: number): Generator<TracedRecord> {
  const { durableLsn } = logPositionOf(broker.log);
  for (const record of broker.log.read({ lsn: fromLsn })) {
    if (record.lsn > durableLsn) return;
    yield record;
  }
}

/**
 * Hands the durable records from `fromLsn` on to `visit` (false: stop), in
 * chunks, at most `examinedMax` of them. `capReason` says why a scan stopped
 * at the cap is partial; retention removing a segment under the read makes
 * it partial too, never a failed request.
 */
async function scanLog(broker: Broker, fromLsn: number, examinedMax: number, limits: LogScanLimits, capReason: string, visit: (record: TracedRecord) => boolean): Promise<LogScanExtent> {
  let first: number | null = null;
  let last: number | null = null;
  let examined = 0;
  const bounds = { chunkItems: limits.logChunkRecords, chunkMs: limits.queryChunkMs, examinedMax };
  const extent = (partial: boolean, reason: string): LogScanExtent => ({ examined, fromLsn: first, throughLsn: last, partial, ...(partial ? { reason } : {}) });
  try {
    const outcome = await scanInChunks(durableRecords(broker, fromLsn), bounds, (record) => {
      first ??= record.lsn;
      last = record.lsn;
      examined++;
      return visit(record);
    });
    return extent(outcome.partial, capReason);
  } catch (error: unknown) {
    if (!(error instanceof LogError && error.code === 'ESEGMENTGONE')) throw error;
    return extent(true, `retention removed a segment while this request read the log, after LSN ${last ?? fromLsn - 1}: ${error.message}`);
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

export async function recentRecords(broker: Broker, url: URL, limits: LogScanLimits): Promise<unknown> {
  checkParameters(url, filterFlags.map((flag) => flag.name));
  const filter = asBadRequest(() => parseFilter(flagsOf(url), Date.now()));
  const limit = filter.limit ?? recordsLimitDefault;
  if (limit > recordsLimitMax) throw badRequest(`limit must be at most ${recordsLimitMax}, got ${limit}`);
  const examinedMax = limits.logRecordsExaminedMax;
  const { firstLsn, durableLsn } = logPositionOf(broker.log);
  const from = Math.max(firstLsn, filter.fromLsn ?? durableLsn - examinedMax + 1);
  const kept: TracedRecord[] = [];
  const capReason = `stopped at the cap of ${examinedMax} records examined per request (logRecordsExaminedMax): give from= to read further`;
  const scanned = await scanLog(broker, from, examinedMax, limits, capReason, (record) => {
    if (pastEnd(filter, record)) return false;
    if (matches(filter, record)) {
      kept.push(record);
      if (kept.length > limit) kept.shift();
    }
    return true;
  });
  // Without from=, the newest records were read: older ones were left out only if fewer than `limit` matched.
  const olderLeftOut = filter.fromLsn === undefined && from > firstLsn && kept.length < limit;
  const extent = !scanned.partial && olderLeftOut
    ? { ...scanned, partial: true, reason: `only the newest ${examinedMax} records were examined (logRecordsExaminedMax), the log holds more from LSN ${firstLsn}: give from= to read older ones` }
    : scanned;
  return {
    records: kept.map((record) => ({ lsn: record.lsn, time: isoTime(record.timestamp), timestamp: record.timestamp, kind: kindLabel(record.kind), summary: summarize(record.kind, record.body) })),
    ...extent,
  };
}

export async function traceOf(broker: Broker, url: URL, limits: LogScanLimits): Promise<unknown> {
  checkParameters(url, ['lsn']);
  const text = url.searchParams.get('lsn') ?? '';
  const lsn = /^\d+$/.test(text) ? Number(text) : NaN;
  const { firstLsn, durableLsn } = logPositionOf(broker.log);
  if (!Number.isSafeInteger(lsn) || lsn < firstLsn || lsn > durableLsn) throw badRequest(`lsn must be a durable LSN in the log (${firstLsn}..${durableLsn}), got '${text}'`);
  const tracer = new MessageTracer({ by: 'lsn', lsn }, 1);
  const examinedMax = limits.traceRecordsExaminedMax;
  const capReason = `stopped at the cap of ${examinedMax} records examined per trace (traceRecordsExaminedMax): destinations still pending may have later steps`;
  const scanned = await scanLog(broker, lsn, examinedMax, limits, capReason, (record) => tracer.take(record));
  const [trace] = tracer.traces;
  if (trace === undefined) {
    // The message's own record could not be read (retention took it): nothing to answer with.
    if (scanned.partial) throw new HttpError(409, 'conflict', `LSN ${lsn} could not be traced: ${scanned.reason ?? ''}`);
    throw notFound(`the record at LSN ${lsn} is not a msg record: a trace follows a message`);
  }
  // The tracer stops the scan once every destination ended, so a partial trace has one still open.
  return { ...traceJson(trace), ...scanned };
}
