/**
 * Projection of document collections written by the ingest bridge, and its
 * part of the snapshot. Pure.
 *
 * A collection holds references, not documents: document id → LSN of its doc
 * record. The document itself stays in the log and is read back from there
 * when a query needs it (core/collection-documents.ts), so RAM and snapshots
 * grow by a few bytes per document whatever its size. Ids come in the
 * record, so replay assigns the same ones; LSNs are the records' own, equal
 * live and replayed.
 *
 * Invariant: a collection's map is in insertion order, which is LSN order
 * (records are applied in LSN order, a snapshot keeps the order, and an id is
 * never set twice), so its first entry is its oldest record (what pins the
 * log) and a reader walking it meets ascending LSNs.
 *
 * Snapshot layout, per collection: [name, nextId, deltas], where deltas
 * interleaves (id − previous id, lsn − previous lsn) for each document in map
 * order, starting from (0, 0). Ids and LSNs mostly advance by small steps, so
 * each pair takes about two bytes of MessagePack and decodes without
 * allocating an array per document.
 */
import type { DocBody } from './records.js';
import type { BrokerState, CollectionState } from './state.js';

export type EncodedCollection = [name: string, nextId: number, deltas: number[]];

export function collectionOf(state: BrokerState, name: string): CollectionState {
  let collection = state.collections.get(name);
  if (!collection) {
    collection = { name, documents: new Map(), nextId: 1 };
    state.collections.set(name, collection);
  }
  return collection;
}

export function applyDoc(state: BrokerState, body: DocBody, lsn: number): void {
  const collection = collectionOf(state, body.col);
  // A document written again (moved out of an old segment, segment-release.ts) goes to the end: the map stays in LSN order.
  collection.documents.delete(body.id);
  collection.documents.set(body.id, lsn);
  if (body.id >= collection.nextId) collection.nextId = body.id + 1;
}

export function encodeCollections(collections: ReadonlyMap<string, CollectionState>): EncodedCollection[] {
  const encoded: EncodedCollection[] = [];
  for (const collection of collections.values()) {
    const deltas: number[] = new Array<number>(collection.documents.size * 2);
    let previousId = 0;
    let previousLsn = 0;
    let index = 0;
    for (const [id, lsn] of collection.documents) {
      deltas[index++] = id - previousId;
      deltas[index++] = lsn - previousLsn;
      previousId = id;
      previousLsn = lsn;
    }
    encoded.push([collection.name, collection.nextId, deltas]);
  }
  return encoded;
}

export function decodeCollections(encoded: readonly EncodedCollection[]): Map<string, CollectionState> {
  const collections = new Map<string, CollectionState>();
  for (const [name, nextId, deltas] of encoded) {
    // A snapshot that held whole documents has [name, documents, nextId] here: refuse it by name, never misread it.
    if (typeof nextId !== 'number' || !Array.isArray(deltas) || deltas.length % 2 !== 0) {
      throw new Error(`snapshot is inconsistent: collection '${name}' is not encoded as [name, nextId, id/LSN deltas] (written by an older Cairn?)`);
    }
    const documents = new Map<number, number>();
    let id = 0;
    let lsn = 0;
    for (let index = 0; index < deltas.length; index += 2) {
      id += deltas[index]!;
      lsn += deltas[index + 1]!;
      documents.set(id, lsn);
    }
    collections.set(name, { name, documents, nextId });
  }
  return collections;
}
