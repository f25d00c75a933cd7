/**
 * A destination's entry columns (entry-queue.ts) in a snapshot, packed: a
 * queue filled in the usual way has consecutive seqs, LSNs that grow by a few,
 * equal sizes, no deliveries and no flags, so the raw columns (25 bytes an
 * entry: 24.5 MB for a million queued messages) are mostly redundant. Packed,
 * such a queue costs about one byte an entry, and a start-up reads, checks and
 * keeps in memory that much less (snapshot format version 3).
 *
 * Each column is one byte string of unsigned LEB128 varints:
 *
 *   seqs        the first seq, then each seq minus the one before (>= 1)
 *   lsns        the first LSN, then zigzag(each LSN minus the one before): a
 *               moved entry's LSN may be above its successor's
 *   sizes       runs: value, count, value, count, … (counts >= 1)
 *   deliveries  runs, as sizes
 *   flags       runs, as sizes
 *
 * Values are integers below 2^53 (seqs and LSNs are safe integers, the
 * others u32 or u8): varints of up to 8 bytes, decoded with arithmetic, not
 * 32-bit bit operations. Decoding checks every count against the entries the
 * seqs column holds and refuses anything else with an Error naming the column.
 */
import { assert } from '../assert.js';
import type { EntryColumns } from './entry-queue.js';

/** The five packed columns, in EntryColumns order. */
export type PackedColumns = [seqs: Uint8Array, lsns: Uint8Array, sizes: Uint8Array, deliveries: Uint8Array, flags: Uint8Array];

const varintBytesMax = 8;
const twoTo31 = 2 ** 31;
/** LSNs and seqs stay below this, so that a zigzag difference (twice a value) is still an exact integer. */
const valueMax = 2 ** 52;

/** A byte string of varints, growing as needed. */
class VarintWriter {
  private bytes: Uint8Array;
  private length = 0;

  constructor(expectedBytes: number) {
    this.bytes = new Uint8Array(Math.max(16, expectedBytes));
  }

  write(value: number): void {
    if (this.length + varintBytesMax > this.bytes.length) {
      const bigger = new Uint8Array(this.bytes.length * 2 + varintBytesMax);
      bigger.set(this.bytes.subarray(0, this.length));
      this.bytes = bigger;
    }
    let rest = value;
    if (rest < twoTo31) {
      while (rest >= 0x80) {
        this.bytes[this.length++] = (rest & 0x7f) | 0x80;
        rest >>>= 7;
      }
    } else {
      while (rest >= 0x80) {
        this.bytes[this.length++] = (rest % 0x80) | 0x80;
        rest = Math.floor(rest / 0x80);
      }
    }
    this.bytes[this.length++] = rest;
  }

  finish(): Uint8Array {
    return this.bytes.slice(0, this.length);
  }
}

/** Reads varints from a byte string; every read past its end or too long throws, naming the column. */
class VarintReader {
  private position = 0;

  constructor(private readonly bytes: Uint8Array, private readonly column: string) {}

  get done(): boolean {
    return this.position === this.bytes.length;
  }

  read(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < varintBytesMax; i++) {
      if (this.position >= this.bytes.length) throw new Error(`snapshot is inconsistent: the ${this.column} column ends early`);
      const byte = this.bytes[this.position++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 0x80;
    }
    throw new Error(`snapshot is inconsistent: a value of the ${this.column} column is longer than ${varintBytesMax} bytes`);
  }
}

const zigzag = (value: number): number => (value < 0 ? -2 * value - 1 : 2 * value);
const unzigzag = (value: number): number => (value % 2 === 1 ? -(value + 1) / 2 : value / 2);

function packRuns(values: ArrayLike<number>, count: number): Uint8Array {
  const writer = new VarintWriter(16);
  let i = 0;
  while (i < count) {
    const value = values[i]!;
    let run = 1;
    while (i + run < count && values[i + run] === value) run++;
    writer.write(value);
    writer.write(run);
    i += run;
  }
  return writer.finish();
}

function unpackRuns(bytes: Uint8Array, column: string, into: Uint32Array | Uint8Array, count: number, valueMax: number): void {
  const reader = new VarintReader(bytes, column);
  let i = 0;
  while (!reader.done) {
    const value = reader.read();
    const run = reader.read();
    if (value > valueMax || run < 1 || i + run > count) throw new Error(`snapshot is inconsistent: the ${column} column does not fit its ${count} entries`);
    into.fill(value, i, i + run);
    i += run;
  }
  if (i !== count) throw new Error(`snapshot is inconsistent: the ${column} column holds ${i} entries where the seqs hold ${count}`);
}

/** The first `count` entries of `columns`, packed. */
export function packColumns(columns: EntryColumns, count: number): PackedColumns {
  const { seqs, lsns, sizes, deliveries, flags } = columns;
  const seqWriter = new VarintWriter(count + 8);
  const lsnWriter = new VarintWriter(count + 8);
  for (let i = 0; i < count; i++) {
    assert(seqs[i]! < valueMax && lsns[i]! < valueMax, 'a seq or LSN is too large to pack');
    seqWriter.write(i === 0 ? seqs[0]! : seqs[i]! - seqs[i - 1]!);
    lsnWriter.write(i === 0 ? lsns[0]! : zigzag(lsns[i]! - lsns[i - 1]!));
  }
  return [seqWriter.finish(), lsnWriter.finish(), packRuns(sizes, count), packRuns(deliveries, count), packRuns(flags, count)];
}

/** Packed columns unpacked into arrays of `count + room` slots (the room lets the queue grow without a copy), with their entry count. */
export function unpackColumns(packed: PackedColumns, roomFor: (count: number) => number): { columns: EntryColumns; count: number } {
  const [seqBytes, lsnBytes, sizeBytes, deliveryBytes, flagBytes] = packed;
  const seqReader = new VarintReader(seqBytes, 'seqs');
  let count = 0;
  for (let i = 0; i < seqBytes.length; i++) if (seqBytes[i]! < 0x80) count++;
  const capacity = count + roomFor(count);
  const columns = {
    seqs: new Float64Array(capacity), lsns: new Float64Array(capacity), sizes: new Uint32Array(capacity), deliveries: new Uint32Array(capacity), flags: new Uint8Array(capacity),
  };
  const lsnReader = new VarintReader(lsnBytes, 'lsns');
  let seq = 0;
  let lsn = 0;
  for (let i = 0; i < count; i++) {
    const seqStep = seqReader.read();
    if (i > 0 && seqStep < 1) throw new Error('snapshot is inconsistent: the seqs column does not ascend');
    seq += seqStep;
    lsn = i === 0 ? lsnReader.read() : lsn + unzigzag(lsnReader.read());
    if (seq >= valueMax || !(lsn >= 0 && lsn < valueMax)) throw new Error(`snapshot is inconsistent: the ${seq >= valueMax ? 'seqs' : 'lsns'} column holds a value out of range`);
    columns.seqs[i] = seq;
    columns.lsns[i] = lsn;
  }
  if (!lsnReader.done) throw new Error(`snapshot is inconsistent: the lsns column holds more than the ${count} entries of the seqs`);
  unpackRuns(sizeBytes, 'sizes', columns.sizes, count, 0xffff_ffff);
  unpackRuns(deliveryBytes, 'deliveries', columns.deliveries, count, 0xffff_ffff);
  unpackRuns(flagBytes, 'flags', columns.flags, count, 0xff);
  return { columns, count };
}
