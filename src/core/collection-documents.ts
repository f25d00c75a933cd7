/**
 * A collection's documents, read back from the log. The collection projection
 * keeps only id → LSN references (projections/collections.ts); whoever shows
 * documents (the HTTP query) reads each one from its doc record here.
 *
 * A reference that does not lead to the doc record it names (another kind,
 * another collection or id), or a record the log cannot read (retired,
 * damaged), is a DocumentReadError naming the collection, id and LSN: an
 * operating error for the one request that met it, never a broker crash.
 */
import { RecordKind, type DocBody } from '../projections/records.js';
import type { CollectionState } from '../projections/state.js';

export type JsonDocument = Readonly<Record<string, unknown>>;

export class DocumentReadError extends Error {
  override readonly name = 'DocumentReadError';
  readonly code = 'EDOCUMENTREAD';
}

/** The slice of the broker's log a document read needs. */
export interface DocumentLog {
  readRecord(lsn: number): { readonly kind: number; readonly body: unknown };
}

/** Where a query gets its documents: references in LSN order, and a read of one document. */
export interface DocumentSource {
  /**
   * Live over the collection (documents added while a query runs are met if their LSN is visible), in LSN
   * order; a Map iterator stays valid across insertions, and documents are never removed.
   */
  references(): Iterator<readonly [id: number, lsn: number]>;
  read(id: number, lsn: number): JsonDocument;
}

/**
 * The documents of `collection` whose doc records are at or below `visibleLsn` (the durable LSN: a document
 * is seen once its publisher could have had its PUBACK, and is readable from the log by then).
 */
export function documentSource(log: DocumentLog, collection: CollectionState, visibleLsn: number): DocumentSource {
  return {
    references: () => visibleReferences(collection.documents, visibleLsn),
    read: (id, lsn) => readDocument(log, collection.name, id, lsn),
  };
}

function* visibleReferences(documents: ReadonlyMap<number, number>, visibleLsn: number): Generator<readonly [number, number]> {
  // Map order is LSN order (collections.ts), so the first invisible reference ends the walk.
  for (const reference of documents) {
    if (reference[1] > visibleLsn) return;
    yield reference;
  }
}

/** Document `id` of `collection` from its doc record at `lsn`, with its `_id`. */
export function readDocument(log: DocumentLog, collection: string, id: number, lsn: number): JsonDocument {
  let record: { readonly kind: number; readonly body: unknown };
  try {
    record = log.readRecord(lsn);
  } catch (error: unknown) {
    throw new DocumentReadError(`document ${id} of collection '${collection}' cannot be read from the log at LSN ${lsn}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  const body = record.body as Partial<DocBody> | undefined;
  if (record.kind !== RecordKind.doc || body?.col !== collection || body.id !== id || typeof body.doc !== 'object' || body.doc === null) {
    throw new DocumentReadError(`the record at LSN ${lsn} is not document ${id} of collection '${collection}' (kind ${record.kind})`);
  }
  return { ...body.doc, _id: id };
}
