/**
 * Packed entry columns (snapshot format 3, entry-columns-codec.ts): any
 * columns a destination can hold (ascending seqs, LSNs in any order, any
 * sizes, counts and flags) unpack to what was packed, with room to grow; a
 * queue filled in order packs to about two bytes an entry, not 25; damaged
 * columns are refused with an Error naming the column, never mis-decoded
 * into more entries than the seqs hold. Format-2 snapshots (raw columns)
 * still decode, to the same state a format-3 encoding of it decodes to.
 */
import { decode, encode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { packColumns, unpackColumns, type PackedColumns } from '../../src/projections/entry-columns-codec.js';
import type { EntryColumns } from '../../src/projections/entry-queue.js';
import { decodeState, encodeState, snapshotFormatVersion, type EncodedState } from '../../src/projections/snapshot-codec.js';
import { announceSeed, testSeed } from '../support/kit.js';

const noRoom = (): number => 0;

const columnsArbitrary = fc.array(fc.record({
  seqStep: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 2 ** 40 })),
  lsn: fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: 2 ** 51 })),
  size: fc.oneof(fc.constant(1024), fc.integer({ min: 0, max: 0xffff_ffff })),
  deliveries: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff_ffff })),
  flags: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xff })),
}), { maxLength: 200 }).map((rows): EntryColumns => {
  let seq = 0;
  return {
    seqs: Float64Array.from(rows, (row) => (seq += row.seqStep)),
    lsns: Float64Array.from(rows, (row) => row.lsn),
    sizes: Uint32Array.from(rows, (row) => row.size),
    deliveries: Uint32Array.from(rows, (row) => row.deliveries),
    flags: Uint8Array.from(rows, (row) => row.flags),
  };
});

describe('packed entry columns', () => {
  it('unpack to what was packed, with the room asked for', () => {
    announceSeed('entry-columns-codec round trip');
    fc.assert(fc.property(columnsArbitrary, fc.integer({ min: 0, max: 50 }), (columns, room) => {
      const count = columns.seqs.length;
      const { columns: unpacked, count: unpackedCount } = unpackColumns(packColumns(columns, count), () => room);
      expect(unpackedCount).toBe(count);
      for (const name of ['seqs', 'lsns', 'sizes', 'deliveries', 'flags'] as const) {
        expect(unpacked[name].length).toBe(count + room);
        expect([...unpacked[name].subarray(0, count)]).toEqual([...columns[name]]);
      }
    }), { seed: testSeed });
  });

  it('a queue filled in order packs to about two bytes an entry', () => {
    const count = 100_000;
    // Four queues filled together: each one's LSNs grow by about four.
    const columns: EntryColumns = {
      seqs: Float64Array.from({ length: count }, (_, i) => i + 1),
      lsns: Float64Array.from({ length: count }, (_, i) => 20_000 + i * 4 + (i % 3)),
      sizes: new Uint32Array(count).fill(1024),
      deliveries: new Uint32Array(count),
      flags: new Uint8Array(count),
    };
    const bytes = packColumns(columns, count).reduce((sum, column) => sum + column.length, 0);
    expect(bytes).toBeLessThan(2.1 * count);
  });

  it('damaged columns are refused with an Error naming the column', () => {
    announceSeed('entry-columns-codec damage');
    fc.assert(fc.property(columnsArbitrary.filter((c) => c.seqs.length > 0), fc.nat(4), fc.nat(), fc.nat(255), (columns, which, where, byte) => {
      const packed = packColumns(columns, columns.seqs.length);
      const damaged = packed.map((column, i) => {
        if (i !== which) return column;
        const copy = column.slice(0, Math.max(0, column.length - (where % 3)));
        if (copy.length > 0) copy[where % copy.length] = byte;
        return copy;
      }) as PackedColumns;
      let unpacked: ReturnType<typeof unpackColumns> | undefined;
      try {
        unpacked = unpackColumns(damaged, noRoom);
      } catch (error) {
        expect((error as Error).message).toMatch(/^snapshot is inconsistent: .*(seqs|lsns|sizes|deliveries|flags)/);
        return;
      }
      // Damage that still reads is consistent: every column has one value per seq.
      for (const name of ['seqs', 'lsns', 'sizes', 'deliveries', 'flags'] as const) expect(unpacked.columns[name].length).toBe(unpacked.count);
    }), { seed: testSeed });
  });
});

describe('format-2 snapshots (raw columns)', () => {
  it('decode to the state that the format-3 encoding of the same state decodes to', () => {
    const current = encodeState(decodeState(decode(encode(version2)) as EncodedState));
    expect(current.v).toBe(snapshotFormatVersion);
    expect(snapshotFormatVersion).toBe(3);
    const queue = decodeState(decode(encode(current)) as EncodedState).queues.get('q')!;
    expect([...queue.pending.entries()].map((e) => [e.seq, e.lsn, e.size, e.deliveries, e.flags])).toEqual([[4, 10, 5, 0, 0], [5, 12, 7, 2, 0], [9, 11, 3, 0, 4]]);
    const session = decodeState(decode(encode(current)) as EncodedState).sessions.get('s')!;
    expect([...session.pending.entries()].map((e) => [e.seq, e.lsn, e.flags])).toEqual([[1, 13, 1]]);
    // The same state, encoded twice, encodes alike (states are compared by their encodings).
    expect(encodeState(decodeState(decode(encode(current)) as EncodedState))).toEqual(current);
  });
});

const raw = (array: Float64Array | Uint32Array | Uint8Array): Uint8Array => new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
const version2 = {
  v: 2, lastLsn: 13, lastTimestamp: 1,
  sessions: [['s', [['t', 1]], [raw(Float64Array.of(1)), raw(Float64Array.of(13)), raw(Uint32Array.of(2)), raw(Uint32Array.of(0)), raw(Uint8Array.of(1)), []], 2, [], [], 0]],
  retained: [],
  exchanges: [],
  queues: [['q', false, [raw(Float64Array.of(4, 5, 9)), raw(Float64Array.of(10, 12, 11)), raw(Uint32Array.of(5, 7, 3)), raw(Uint32Array.of(0, 2, 0)), raw(Uint8Array.of(0, 0, 4)), []], 10, 0]],
  bindings: [],
  collections: [],
  groups: [],
};
