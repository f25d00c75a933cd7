/**
 * The chunked collection query (src/http/collection-query.ts), whose
 * documents are read back from the log by LSN, against the same query run
 * by runQuery over the documents in memory (src/http/query.ts).
 *
 * Documents are doc records in a MemoryLog (MessagePack-encoded and decoded,
 * as the segmented log returns them), among other records; the collection
 * is the projection of those records. For any documents, visible LSN, query
 * (filter, sort with many ties, skip, limit, projection) and limits (chunk
 * size, examined cap):
 *   - not partial: the answer is runQuery's over every visible document;
 *   - partial: exactly the cap was examined, documents were left, and the
 *     answer is runQuery's over the prefix of documents the scan reached;
 *   - count agrees the same way with countMatching.
 */
import { decode, encode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { documentSource, DocumentReadError, readDocument } from '../../src/core/collection-documents.js';
import { countDocuments, findDocuments, type ScanLimits } from '../../src/http/collection-query.js';
import { countMatching, parseQuery, runQuery, type JsonDocument, type QueryInput } from '../../src/http/query.js';
import { apply } from '../../src/projections/apply.js';
import { RecordKind, type BrokerRecord } from '../../src/projections/records.js';
import { initialState, type CollectionState } from '../../src/projections/state.js';
import { announceSeed, testSeed } from '../support/kit.js';

announceSeed('test/property/collection-query');
const runs = { seed: testSeed, numRuns: 400 } as const;

/** A log of encoded records, read back decoded (a fresh object per read, as from a segment). */
class EncodedRecords {
  private readonly records: Array<{ kind: number; body: Uint8Array }> = [];
  append(kind: number, body: unknown): number {
    this.records.push({ kind, body: encode(body) });
    return this.records.length;
  }
  readRecord(lsn: number): BrokerRecord {
    const record = this.records[lsn - 1];
    if (record === undefined) throw new RangeError(`no record at LSN ${lsn}`);
    return { lsn, timestamp: 0, kind: record.kind, body: decode(record.body) };
  }
}

interface Built {
  readonly log: EncodedRecords;
  readonly collection: CollectionState;
  /** The documents as the query sees them (with _id), in LSN order, with their LSNs. */
  readonly documents: ReadonlyArray<{ lsn: number; document: JsonDocument }>;
}

/** Doc records for `bodies` in collection 'c', each after `gaps[i]` records of other kinds; the state is their fold. */
function build(bodies: ReadonlyArray<Record<string, unknown>>, gaps: readonly number[]): Built {
  const log = new EncodedRecords();
  const state = initialState();
  const documents: Array<{ lsn: number; document: JsonDocument }> = [];
  const applied = (kind: number, body: unknown): number => {
    const lsn = log.append(kind, body);
    apply(state, { lsn, timestamp: lsn, kind, body });
    return lsn;
  };
  bodies.forEach((doc, index) => {
    for (let gap = 0; gap < (gaps[index] ?? 0); gap++) {
      applied(RecordKind.doc, { col: 'other', id: documents.length * 10 + gap + 1, doc: { g: 0 } });
      applied(RecordKind.retain, { t: 'x', p: new Uint8Array([1]), qos: 0 });
    }
    const id = index + 1;
    const lsn = applied(RecordKind.doc, { col: 'c', id, doc });
    documents.push({ lsn, document: { ...doc, _id: id } });
  });
  return { log, collection: state.collections.get('c') ?? { name: 'c', documents: new Map(), nextId: 1 }, documents };
}

const bodyArbitrary = fc.record(
  { g: fc.integer({ min: 0, max: 3 }), v: fc.oneof(fc.integer({ min: -5, max: 5 }), fc.constantFrom('a', 'b', null)), t: fc.constantFrom('x', 'y') },
  { requiredKeys: ['t'] },
);
const queryArbitrary: fc.Arbitrary<QueryInput> = fc.record({
  filter: fc.constantFrom(undefined, {}, { g: 1 }, { v: { $gt: 0 } }, { $or: [{ g: 0 }, { t: 'y' }] }, { v: { $exists: false } }),
  sort: fc.constantFrom(undefined, { g: 1 }, { v: -1 }, { g: -1, t: 1 }),
  skip: fc.constantFrom(undefined, 0, 1, 3, 10),
  limit: fc.constantFrom(undefined, 0, 1, 2, 5, 50),
  projection: fc.constantFrom(undefined, { g: 1 }, { v: 0 }),
}, { requiredKeys: [] });
const limitsArbitrary: fc.Arbitrary<ScanLimits> = fc.record({
  chunkDocuments: fc.integer({ min: 1, max: 7 }),
  chunkMs: fc.constant(1000),
  examinedMax: fc.integer({ min: 1, max: 45 }),
});
const casesArbitrary = fc.record({
  bodies: fc.array(bodyArbitrary, { maxLength: 40 }),
  gaps: fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 40 }),
  hidden: fc.integer({ min: 0, max: 5 }),
  query: queryArbitrary,
  limits: limitsArbitrary,
});

/** The visible documents: all but the last `hidden` doc records of 'c' are at or below the visible LSN. */
function visibleOf(built: Built, hidden: number): { visibleLsn: number; visible: JsonDocument[] } {
  const shown = built.documents.slice(0, Math.max(0, built.documents.length - hidden));
  const visibleLsn = shown.length === 0 ? 0 : shown[shown.length - 1]!.lsn;
  return { visibleLsn, visible: shown.map((entry) => entry.document) };
}

describe('chunked collection query over documents read from the log', () => {
  it('equals runQuery over the documents in memory, or over the examined prefix when the cap made it partial', async () => {
    await fc.assert(fc.asyncProperty(casesArbitrary, async ({ bodies, gaps, hidden, query: input, limits }) => {
      const built = build(bodies, gaps);
      const { visibleLsn, visible } = visibleOf(built, hidden);
      const query = parseQuery(input);
      const found = await findDocuments(documentSource(built.log, built.collection, visibleLsn), query, limits);
      // Skipped references are not read when every document matches and no sort needs them.
      const reached = found.examined + (query.matchesAll && query.sort === undefined ? Math.min(query.skip, visible.length) : 0);
      if (found.partial) {
        expect(found.examined).toBe(limits.examinedMax);
        expect(reached).toBeLessThan(visible.length);
        expect(found.documents).toEqual(runQuery(query, visible.slice(0, reached)));
      } else {
        expect(reached).toBeLessThanOrEqual(visible.length);
        expect(found.documents).toEqual(runQuery(query, visible));
      }
      if (query.limit !== undefined) expect(found.documents.length).toBeLessThanOrEqual(query.limit);

      const counted = await countDocuments(documentSource(built.log, built.collection, visibleLsn), query, limits);
      if (counted.partial) {
        expect(counted.examined).toBe(limits.examinedMax);
        expect(counted.count).toBe(countMatching(query, visible.slice(0, counted.examined)));
      } else {
        expect(counted.count).toBe(countMatching(query, visible));
      }
    }), runs);
  });

  it('stops reading at limit when there is no sort, and reads nothing to count without a filter', async () => {
    const built = build(Array.from({ length: 100 }, (_, index) => ({ t: 'x', g: index % 4 })), []);
    const source = documentSource(built.log, built.collection, Number.MAX_SAFE_INTEGER);
    const limits = { chunkDocuments: 10, chunkMs: 1000, examinedMax: 1000 };
    const found = await findDocuments(source, parseQuery({ filter: { g: 3 }, limit: 2 }), limits);
    expect(found).toMatchObject({ examined: 8, partial: false });
    expect(found.documents.map((document) => document['_id'])).toEqual([4, 8]);
    const page = await findDocuments(source, parseQuery({ skip: 90, limit: 5 }), limits);
    expect(page).toMatchObject({ examined: 5, partial: false });
    expect(page.documents.map((document) => document['_id'])).toEqual([91, 92, 93, 94, 95]);
    expect(await countDocuments(source, parseQuery({}), limits)).toEqual({ count: 100, examined: 0, partial: false });
    expect(await countDocuments(source, parseQuery({ filter: { g: 0 } }), { ...limits, examinedMax: 50 })).toEqual({ count: 13, examined: 50, partial: true });
  });

  it('lets the event loop turn between chunks', async () => {
    const built = build(Array.from({ length: 100 }, () => ({ t: 'x' })), []);
    let turns = 0;
    let querying = true;
    const spin = (): void => { turns++; if (querying) setImmediate(spin); };
    setImmediate(spin);
    const counted = await countDocuments(documentSource(built.log, built.collection, Number.MAX_SAFE_INTEGER), parseQuery({ filter: { t: 'x' } }), { chunkDocuments: 10, chunkMs: 1000, examinedMax: 1000 });
    querying = false;
    expect(counted).toEqual({ count: 100, examined: 100, partial: false });
    // 100 documents in chunks of 10: 9 yields, each a turn in which the spinner runs.
    expect(turns).toBeGreaterThanOrEqual(9);
  });

  it('a reference that does not lead to its doc record is a DocumentReadError naming the LSN', () => {
    const built = build([{ t: 'x' }, { t: 'y' }], [1]);
    const [first] = built.documents;
    expect(readDocument(built.log, 'c', 1, first!.lsn)).toEqual({ t: 'x', _id: 1 });
    expect(() => readDocument(built.log, 'c', 2, first!.lsn)).toThrow(new DocumentReadError(`the record at LSN ${first!.lsn} is not document 2 of collection 'c' (kind ${RecordKind.doc})`));
    expect(() => readDocument(built.log, 'c', 1, 2)).toThrow(/is not document 1 of collection 'c' \(kind 7\)/);
    expect(() => readDocument(built.log, 'c', 1, 99)).toThrow(/document 1 of collection 'c' cannot be read from the log at LSN 99: no record at LSN 99/);
  });
});
