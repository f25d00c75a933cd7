/**
 * A query over a collection whose documents live in the log: the documents
 * are read one by one from their doc records (core/collection-documents.ts)
 * and tested in chunks (chunked-scan.ts), so MQTT and AMQP clients keep being
 * served while a large query runs (issue 12: a query over 443k in-memory
 * documents blocked every client for seconds).
 *
 * Bounds, from HttpLimits: a chunk ends after `chunkDocuments` documents or
 * `chunkMs` milliseconds, whichever comes first; a query examines at most
 * `examinedMax` documents. A query that stops at that cap with documents left
 * unexamined answers `partial: true`, never a silently shortened result.
 *
 * Results equal runQuery over the same documents in memory (query.ts) when
 * not partial: without a sort the scan stops once skip + limit documents
 * matched; with one, the best skip + limit matches are kept, the buffer
 * sorted and trimmed to them each time it reaches twice that or a chunk's
 * worth (mingo's sort is stable, so equal keys keep the scan's order, as
 * they would in one sort of everything).
 */
import type { DocumentSource, JsonDocument } from '../core/collection-documents.js';
import { scanInChunks, type ScanOutcome } from './chunked-scan.js';
import { finishQuery, sortDocuments, type Query } from './query.js';

export interface ScanLimits {
  readonly chunkDocuments: number;
  readonly chunkMs: number;
  readonly examinedMax: number;
}

export interface FoundDocuments extends ScanOutcome {
  readonly documents: JsonDocument[];
}

export interface CountedDocuments extends ScanOutcome {
  readonly count: number;
}

/** The documents `query` selects, sorted, skipped, limited and projected. */
export async function findDocuments(source: DocumentSource, query: Query, limits: ScanLimits): Promise<FoundDocuments> {
  if (query.limit === 0) return { documents: [], examined: 0, partial: false };
  if (query.sort === undefined) return findInOrder(source, query, limits);
  const sort = query.sort;
  const keep = query.limit === undefined ? Infinity : query.skip + query.limit;
  // Trimming sorts the buffer: at most once a chunk, however small `keep` is.
  const trimAt = Math.max(2 * keep, limits.chunkDocuments);
  let best: JsonDocument[] = [];
  const outcome = await scan(source, limits, 0, (document) => {
    if (!query.filter(document)) return true;
    best.push(document);
    if (best.length >= trimAt) best = sortDocuments(sort, best).slice(0, keep);
    return true;
  });
  return { ...outcome, documents: finishQuery(query, best) };
}

/** No sort: the first matches in LSN order; with every document matching, the skipped ones are not even read. */
async function findInOrder(source: DocumentSource, query: Query, limits: ScanLimits): Promise<FoundDocuments> {
  const wanted = query.limit ?? Infinity;
  const found: JsonDocument[] = [];
  let skipping = query.matchesAll ? 0 : query.skip;
  const outcome = await scan(source, limits, query.matchesAll ? query.skip : 0, (document) => {
    if (!query.filter(document)) return true;
    if (skipping > 0) skipping--;
    else found.push(document);
    return found.length < wanted;
  });
  return { ...outcome, documents: finishQuery({ ...query, skip: 0 }, found) };
}

/** How many documents match; with no filter, without reading any. */
export async function countDocuments(source: DocumentSource, query: Query, limits: ScanLimits): Promise<CountedDocuments> {
  if (query.matchesAll) {
    let count = 0;
    for (const references = source.references(); !references.next().done;) count++;
    return { count, examined: 0, partial: false };
  }
  let count = 0;
  const outcome = await scan(source, limits, 0, (document) => {
    if (query.filter(document)) count++;
    return true;
  });
  return { ...outcome, count };
}

/**
 * Reads the documents after the first `unread` references, in order, and hands each to `visit` (false: stop),
 * in chunks (chunked-scan.ts).
 */
async function scan(source: DocumentSource, limits: ScanLimits, unread: number, visit: (document: JsonDocument) => boolean): Promise<ScanOutcome> {
  const references = source.references();
  for (let skipped = 0; skipped < unread; skipped++) if (references.next().done) return { examined: 0, partial: false };
  const bounds = { chunkItems: limits.chunkDocuments, chunkMs: limits.chunkMs, examinedMax: limits.examinedMax };
  return scanInChunks(references, bounds, ([id, lsn]) => visit(source.read(id, lsn)));
}
