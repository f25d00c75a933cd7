/** Projection of document collections written by the ingest bridge. Ids come in the record, so replay assigns the same ones. Pure. */
import type { DocBody } from './records.js';
import type { BrokerState, CollectionState } from './state.js';

export function collectionOf(state: BrokerState, name: string): CollectionState {
  let collection = state.collections.get(name);
  if (!collection) {
    collection = { name, documents: new Map(), nextId: 1 };
    state.collections.set(name, collection);
  }
  return collection;
}

export function applyDoc(state: BrokerState, body: DocBody): void {
  const collection = collectionOf(state, body.col);
  collection.documents.set(body.id, body.doc);
  if (body.id >= collection.nextId) collection.nextId = body.id + 1;
}
