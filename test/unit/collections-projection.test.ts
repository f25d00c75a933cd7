/**
 * The collection projection holds id → LSN references, not documents
 * (src/projections/collections.ts): what a doc record leaves in the state,
 * its snapshot encoding (id/LSN deltas) through MessagePack and back, the
 * refusal of a snapshot that held whole documents, and the pin a collection
 * puts on the log (src/projections/pins.ts).
 */
import { decode, encode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeCollections, encodeCollections, type EncodedCollection } from '../../src/projections/collections.js';
import { apply } from '../../src/projections/apply.js';
import { oldestLiveMessage } from '../../src/projections/pins.js';
import { RecordKind } from '../../src/projections/records.js';
import { decodeState, encodeState } from '../../src/projections/snapshot-codec.js';
import { initialState, type CollectionState } from '../../src/projections/state.js';
import { announceSeed, testSeed } from '../support/kit.js';

announceSeed('test/unit/collections-projection');

describe('collection projection: references, not documents', () => {
  it('a doc record leaves its id and LSN, and the document nowhere in the state', () => {
    const state = initialState();
    apply(state, { lsn: 7, timestamp: 1, kind: RecordKind.doc, body: { col: 'readings', id: 1, doc: { value: 27.3, _topic: 'sensors/a' } } });
    apply(state, { lsn: 9, timestamp: 2, kind: RecordKind.doc, body: { col: 'readings', id: 2, doc: { value: 18.9, _topic: 'sensors/b' } } });
    const collection = state.collections.get('readings')!;
    expect([...collection.documents]).toEqual([[1, 7], [2, 9]]);
    expect(collection.nextId).toBe(3);
    expect(JSON.stringify(encodeState(state))).not.toContain('sensors/');
  });

  it('snapshot encoding round-trips through MessagePack, in map order, whatever the steps between ids and LSNs', () => {
    const referencesArbitrary = fc.uniqueArray(fc.tuple(fc.integer({ min: 1, max: 2 ** 40 }), fc.integer({ min: 1, max: 2 ** 40 })), { selector: ([id]) => id, maxLength: 50 });
    fc.assert(fc.property(fc.array(referencesArbitrary, { maxLength: 3 }), (collectionsReferences) => {
      const collections = new Map<string, CollectionState>(collectionsReferences.map((references, index) => {
        const name = `c${index}`;
        return [name, { name, documents: new Map(references), nextId: Math.max(0, ...references.map(([id]) => id)) + 1 }];
      }));
      const decoded = decodeCollections(decode(encode(encodeCollections(collections))) as EncodedCollection[]);
      expect([...decoded.values()].map((c) => [c.name, [...c.documents], c.nextId])).toEqual([...collections.values()].map((c) => [c.name, [...c.documents], c.nextId]));
    }), { seed: testSeed, numRuns: 200 });
  });

  it('consecutive ids and nearby LSNs take about two bytes per document in the snapshot', () => {
    const documents = new Map<number, number>();
    for (let id = 1; id <= 10_000; id++) documents.set(id, 1_000_000 + id * 3);
    const bytes = encode(encodeCollections(new Map([['readings', { name: 'readings', documents, nextId: 10_001 }]]))).byteLength;
    expect(bytes).toBeLessThan(10_000 * 2 + 64);
  });

  it('a snapshot that held whole documents is refused by name, not misread', () => {
    const older = [['readings', [[1, { value: 1 }]], 2]] as unknown as EncodedCollection[];
    expect(() => decodeCollections(older)).toThrow("snapshot is inconsistent: collection 'readings' is not encoded as [name, nextId, id/LSN deltas] (written by an older Cairn?)");
  });

  it('a restored state keeps the references, so the same documents are read back', () => {
    const state = initialState();
    for (let id = 1; id <= 5; id++) apply(state, { lsn: id * 2, timestamp: id, kind: RecordKind.doc, body: { col: 'a', id, doc: { id } } });
    const restored = decodeState(decode(encode(encodeState(state))) as ReturnType<typeof encodeState>);
    expect([...restored.collections.get('a')!.documents]).toEqual([[1, 2], [2, 4], [3, 6], [4, 8], [5, 10]]);
    expect(encodeState(restored)).toEqual(encodeState(state));
  });

  it("a collection pins the log from its first document's record", () => {
    const state = initialState();
    expect(oldestLiveMessage(state)).toBeUndefined();
    apply(state, { lsn: 3, timestamp: 1, kind: RecordKind.doc, body: { col: 'b', id: 1, doc: {} } });
    apply(state, { lsn: 4, timestamp: 1, kind: RecordKind.doc, body: { col: 'a', id: 1, doc: {} } });
    apply(state, { lsn: 5, timestamp: 1, kind: RecordKind.doc, body: { col: 'b', id: 2, doc: {} } });
    expect(oldestLiveMessage(state)).toEqual({ lsn: 3, holder: { kind: 'collection', collection: 'b', id: 1 } });
  });
});
