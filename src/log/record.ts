/**
 * The record frame: the only module that knows how a record is laid out on
 * disk. Everything else calls these functions.
 *
 * Frame, format version 1 (all integers little-endian):
 *
 *   offset  bytes  field
 *   ------  -----  -----------------------------------------------------------
 *        0      8  checksum   xxhash64 (seed 0) of bytes [8, length): every
 *                             byte of the frame after this field
 *        8      4  length     u32, the whole frame in bytes (29 + body bytes)
 *       12      8  lsn        u64, < 2^53; consecutive across the log
 *       20      8  timestamp  f64, wall-clock epoch milliseconds
 *       28      1  kind       u8, 1..255 (0 is never written, so zeroed disk
 *                             space cannot pass for a record)
 *       29      n  body       MessagePack (@msgpack/msgpack), n >= 1
 *
 *   +----------+--------+----------+-----------+------+------------------+
 *   | checksum | length |   lsn    | timestamp | kind |  body (msgpack)  |
 *   |   u64    |  u32   |   u64    |    f64    |  u8  |    n bytes       |
 *   +----------+--------+----------+-----------+------+------------------+
 *
 * The checksum covers the length, so a torn or flipped length is caught like
 * any other damage; it sits first so that the bytes it covers are one range.
 * A zero-filled region (what a crash can leave after a file was extended)
 * fails the length check immediately.
 *
 * The checksum is computed when a frame is encoded, verified again just before
 * the batch is written (a cheap guard against a buffer overwritten in memory)
 * and verified just after every read.
 */
import { Decoder, Encoder } from '@msgpack/msgpack';
import { assert } from '../assert.js';
import { decodeBody, unsupported } from './body-decoder.js';
import { encodeBodyInto, unsupported as encoderUnsupported } from './body-encoder.js';
import { checksum64, chunkChecksumMatches, frameScratch, frameScratchBytesMax, nextChunkOwner, prefixedChecksumMatches, stampScratch } from './checksum.js';
import { InvalidRecordError } from './errors.js';

export type Lsn = number;

export interface AppendRecord {
  readonly kind: number;
  readonly timestamp: number;
  readonly body: unknown;
}

export interface LogRecord {
  readonly lsn: Lsn;
  readonly timestamp: number;
  readonly kind: number;
  readonly body: unknown;
  /** Framed bytes on disk, header included. */
  readonly size: number;
}

export const frameHeaderBytes = 29;
/** A MessagePack value is at least one byte. */
export const frameBytesMin = frameHeaderBytes + 1;
/** The largest frame the log writes or accepts when reading: a limit, so a corrupt length cannot make a reader allocate gigabytes. */
export const frameBytesMax = 32 * 1024 * 1024;
export const kindMin = 1;
export const kindMax = 255;

const offsetLength = 8;
const offsetLsn = 12;
const offsetTimestamp = 20;
const offsetKind = 28;
const twoTo32 = 2 ** 32;

// One encoder and one decoder for the process: construction is the expensive
// part, and encode/decode are synchronous, so sharing them is safe.
const encoder = new Encoder();
const decoder = createCopyingDecoder();

/**
 * @msgpack/msgpack returns binary values as views of the input. Records are
 * decoded straight from the read chunk (no per-record copy), so each binary
 * value is copied out instead: a payload must neither pin the 1 MiB chunk nor
 * see it overwritten by the next read. This overrides a method the library
 * does not document, so the override is checked once at load: if a new
 * version renamed it, start-up fails here instead of payloads going stale.
 */
function createCopyingDecoder(): Decoder {
  type Binary = { decodeBinary(byteLength: number, headOffset: number): Uint8Array };
  const original = (Decoder.prototype as unknown as Binary).decodeBinary;
  assert(typeof original === 'function', '@msgpack/msgpack Decoder has no decodeBinary: update record.ts');
  const copying = new Decoder();
  (copying as unknown as Binary).decodeBinary = function (this: Binary, byteLength: number, headOffset: number): Uint8Array {
    const view = original.call(this, byteLength, headOffset);
    const copy = new Uint8Array(view.length);
    copy.set(view);
    return copy;
  };
  const probe = new Uint8Array([0xc4, 1, 42]);
  const decoded = copying.decode(probe) as Uint8Array;
  probe[2] = 0;
  assert(decoded[0] === 42, '@msgpack/msgpack binary values still alias their input: update record.ts');
  return copying;
}

/** Rejects what the frame cannot carry. The body is checked by encoding it. */
export function checkAppendRecord(record: AppendRecord): void {
  const { kind, timestamp } = record;
  if (!Number.isInteger(kind) || kind < kindMin || kind > kindMax) {
    throw new InvalidRecordError(`record kind must be an integer in ${kindMin}..${kindMax}, got ${String(kind)}`);
  }
  if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) {
    throw new InvalidRecordError(`record timestamp must be a finite number of epoch milliseconds, got ${String(timestamp)}`);
  }
}

/**
 * MessagePack of `body` as a view of the shared encoder's buffer: valid only
 * until the next call, so the caller copies it into its batch at once.
 */
export function encodeBody(body: unknown): Uint8Array {
  let bytes: Uint8Array;
  try {
    bytes = encoder.encodeSharedRef(body);
  } catch (error) {
    throw new InvalidRecordError(`record body cannot be encoded as MessagePack: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (frameHeaderBytes + bytes.length > frameBytesMax) {
    throw new InvalidRecordError(`record body is ${bytes.length} bytes; a frame holds at most ${frameBytesMax - frameHeaderBytes}`);
  }
  return bytes;
}

/**
 * Writes one frame at `offset` (the caller made room) and returns its length.
 * A frame that fits the checksum scratch (checksum.ts: all but the biggest) is
 * composed there, stamped with its checksum in WebAssembly and copied here in
 * one piece: per record that is a quarter of what hashing it here costs
 * (a view to hash, the checksum as a BigInt, masked, then stored).
 */
export function writeFrame(target: Uint8Array, offset: number, lsn: Lsn, timestamp: number, kind: number, body: Uint8Array): number {
  const length = frameHeaderBytes + body.length;
  // Messages are constant strings: this runs per record, and a template would be built on every call.
  assert(Number.isSafeInteger(lsn) && lsn >= 1, 'frame LSN out of range');
  assert(offset + length <= target.length, 'frame does not fit its target');
  const scratch = frameScratch(length);
  if (scratch === undefined) {
    const view = new DataView(target.buffer, target.byteOffset + offset, length);
    writeHeader(view, length, lsn, timestamp, kind);
    target.set(body, offset + frameHeaderBytes);
    view.setBigUint64(0, checksum64(new Uint8Array(target.buffer, target.byteOffset + offset + offsetLength, length - offsetLength)), true);
    return length;
  }
  writeHeader(scratch.view, length, lsn, timestamp, kind);
  scratch.bytes.set(body, frameHeaderBytes);
  stampScratch(length);
  target.set(scratch.bytes.subarray(0, length), offset);
  return length;
}

/**
 * The header fields after the checksum, at the start of `view`, through the
 * DataView: plain stores once compiled, where Buffer's writers check their
 * arguments.
 */
function writeHeader(view: DataView, length: number, lsn: Lsn, timestamp: number, kind: number): void {
  view.setUint32(offsetLength, length, true);
  view.setUint32(offsetLsn, lsn % twoTo32, true);
  view.setUint32(offsetLsn + 4, Math.floor(lsn / twoTo32), true);
  view.setFloat64(offsetTimestamp, timestamp, true);
  view.setUint8(offsetKind, kind);
}

/** Where appendFrame puts a frame: `reserve` makes room for that many more bytes after `length` in `buffer`. */
export interface FrameSink {
  readonly buffer: Uint8Array;
  readonly length: number;
  reserve(bytes: number): void;
}

/**
 * The append path: checks `record`, encodes it as the frame of `lsn` right
 * after `sink.length` (after reserving room) and returns the frame's length.
 * A body the fast encoder takes (body-encoder.ts: what Cairn's bodies are
 * made of) is encoded straight into the checksum scratch behind the header,
 * so the frame is copied once, finished; any other goes through
 * @msgpack/msgpack and writeFrame. Same bytes either way.
 */
export function appendFrame(sink: FrameSink, lsn: Lsn, record: AppendRecord): number {
  checkAppendRecord(record);
  const scratch = frameScratch(frameScratchBytesMax);
  const end = scratch === undefined ? encoderUnsupported : encodeBodyInto(scratch.bytes, scratch.view, frameHeaderBytes, frameScratchBytesMax, record.body);
  if (end === encoderUnsupported || scratch === undefined) {
    const body = encodeBody(record.body);
    sink.reserve(frameHeaderBytes + body.length);
    return writeFrame(sink.buffer, sink.length, lsn, record.timestamp, record.kind, body);
  }
  assert(Number.isSafeInteger(lsn) && lsn >= 1, 'frame LSN out of range');
  writeHeader(scratch.view, end, lsn, record.timestamp, record.kind);
  stampScratch(end);
  sink.reserve(end);
  sink.buffer.set(scratch.bytes.subarray(0, end), sink.length);
  return end;
}

/** Encodes one frame into a fresh buffer (tests, tools). */
export function encodeFrame(lsn: Lsn, record: AppendRecord): Buffer {
  checkAppendRecord(record);
  const body = encodeBody(record.body);
  const frame = Buffer.alloc(frameHeaderBytes + body.length);
  writeFrame(frame, 0, lsn, record.timestamp, record.kind, body);
  return frame;
}

export function frameLength(source: Buffer, offset: number): number {
  return source.readUInt32LE(offset + offsetLength);
}

export function isPlausibleFrameLength(length: number): boolean {
  return length >= frameBytesMin && length <= frameBytesMax;
}

/** True when the stored checksum matches the bytes; `length` must already be plausible and in bounds. */
export function frameChecksumMatches(source: Buffer, offset: number, length: number): boolean {
  // The checksum field is the frame's first 8 bytes and covers the rest of it.
  return prefixedChecksumMatches(source, offset, length);
}

/**
 * frameChecksumMatches for a frame in a cursor's reused read chunk (see
 * chunkChecksumMatches): `owner` and `fill` say which contents the chunk holds.
 */
export function chunkFrameChecksumMatches(owner: number, fill: number, chunk: Uint8Array, chunkBytes: number, offset: number, length: number): boolean {
  return chunkChecksumMatches(owner, fill, chunk, chunkBytes, offset, length);
}

/**
 * The header fields through a DataView over the chunk: the cursor reads them
 * for every frame, and DataView reads compile to plain loads where Buffer's
 * readDoubleLE goes through a scratch Float64Array.
 */
export function frameLengthIn(view: DataView, offset: number): number {
  return view.getUint32(offset + offsetLength, true);
}

export function frameLsnIn(view: DataView, offset: number): Lsn {
  return view.getUint32(offset + offsetLsn + 4, true) * twoTo32 + view.getUint32(offset + offsetLsn, true);
}

export function frameTimestampIn(view: DataView, offset: number): number {
  return view.getFloat64(offset + offsetTimestamp, true);
}

export function frameKindIn(view: DataView, offset: number): number {
  return view.getUint8(offset + offsetKind);
}

export function frameLsn(source: Buffer, offset: number): Lsn {
  return source.readUInt32LE(offset + offsetLsn + 4) * twoTo32 + source.readUInt32LE(offset + offsetLsn);
}

export function frameTimestamp(source: Buffer, offset: number): number {
  return source.readDoubleLE(offset + offsetTimestamp);
}

export function frameKind(source: Buffer, offset: number): number {
  return source[offset + offsetKind] ?? 0;
}

/**
 * Decodes the body of a verified frame; binary values come out as fresh
 * copies. `bytes` is a plain Uint8Array over the chunk and `view` a DataView
 * over the same bytes (see body-decoder.ts). The fast decoder handles what
 * Cairn writes; whatever it leaves goes to @msgpack/msgpack.
 */
export function decodeFrameBody(bytes: Uint8Array, view: DataView, offset: number, length: number): unknown {
  const body = decodeBody(bytes, view, offset + frameHeaderBytes, length - frameHeaderBytes);
  if (body !== unsupported) return body;
  return decoder.decode(new Uint8Array(bytes.buffer, bytes.byteOffset + offset + frameHeaderBytes, length - frameHeaderBytes));
}

/**
 * Checks a frame fetched on its own (a read by LSN), whose place and length
 * come from the offset index: its checksum, its length field and its LSN.
 * Returns what is wrong with it, or undefined.
 */
export function frameProblem(source: Buffer, view: DataView, offset: number, length: number, lsn: Lsn): string | undefined {
  assert(isPlausibleFrameLength(length) && offset + length <= source.length, 'an indexed frame length is out of range');
  if (!frameChecksumMatches(source, offset, length)) return 'checksum mismatch';
  const stored = frameLengthIn(view, offset);
  if (stored !== length) return `the frame says it is ${stored} bytes long where the segment's index says ${length}`;
  const found = frameLsnIn(view, offset);
  if (found !== lsn) return `the frame holds LSN ${found} where ${lsn} was expected`;
  return undefined;
}

/** A verified frame as a record; `bytes` and `view` cover the same memory (see decodeFrameBody). */
export function decodeFrame(bytes: Uint8Array, view: DataView, offset: number, length: number): LogRecord {
  const body = decodeFrameBody(bytes, view, offset, length);
  return { lsn: frameLsnIn(view, offset), timestamp: frameTimestampIn(view, offset), kind: frameKindIn(view, offset), body, size: length };
}

// The append path's id for chunkChecksumMatches: a batch is copied into WebAssembly memory once and
// its frames verified there, instead of one copy per frame. `batchFill` changes for every batch verified.
const batchOwner = nextChunkOwner();
let batchFill = 0;

/** Re-verifies every frame of an encoded batch (header and checksum) just before it goes to disk. */
export function assertFramesIntact(batch: Buffer, end: number, firstLsn: Lsn): void {
  batchFill += 1;
  const view = new DataView(batch.buffer, batch.byteOffset, end);
  let offset = 0;
  let lsn = firstLsn;
  while (offset < end) {
    const length = frameLengthIn(view, offset);
    assert(isPlausibleFrameLength(length) && offset + length <= end, 'a batch frame has a bad length');
    assert(chunkChecksumMatches(batchOwner, batchFill, batch, end, offset, length), 'a batch frame changed after it was encoded');
    assert(frameLsnIn(view, offset) === lsn, 'a batch frame holds an LSN other than the one assigned');
    offset += length;
    lsn += 1;
  }
}
