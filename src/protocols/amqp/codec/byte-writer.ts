/**
 * A growable big-endian writer for the AMQP primitive types (spec 4.2.5).
 *
 * It validates every value against its wire type before writing, because
 * Node's own writers either throw an untyped RangeError or silently wrap, and
 * a wrapped octet on the wire is a protocol error the peer will blame on us.
 * Out-of-range values raise ENCODE_INVALID (reply code 541): they are Cairn's
 * own bug or an unchecked server-built value, never a peer's fault.
 *
 * Invariant: `length <= buffer.length`; bytes in [0, length) are written.
 */
import { encodeInvalid } from './errors.js';

const INITIAL_CAPACITY_BYTES = 256;

function checkInteger(value: number, minimum: number, maximum: number, what: string): void {
  if (!Number.isInteger(value) || value < minimum || value > maximum) {
    throw encodeInvalid(`${what} must be an integer in [${minimum}, ${maximum}], got ${String(value)}`);
  }
}

export class ByteWriter {
  private buffer: Buffer;
  length = 0;

  constructor(capacityBytes = INITIAL_CAPACITY_BYTES) {
    this.buffer = Buffer.allocUnsafe(Math.max(capacityBytes, 16));
  }

  /** Makes room for `count` more bytes, doubling so that n writes cost O(n). */
  ensure(count: number): void {
    const needed = this.length + count;
    if (needed <= this.buffer.length) return;
    let capacity = this.buffer.length * 2;
    while (capacity < needed) capacity *= 2;
    const grown = Buffer.allocUnsafe(capacity);
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }

  octet(value: number, what = 'octet'): void {
    checkInteger(value, 0, 0xff, what);
    this.ensure(1);
    this.buffer[this.length++] = value;
  }

  int8(value: number, what = 'int8'): void {
    checkInteger(value, -0x80, 0x7f, what);
    this.ensure(1);
    this.length = this.buffer.writeInt8(value, this.length);
  }

  short(value: number, what = 'short'): void {
    checkInteger(value, 0, 0xffff, what);
    this.ensure(2);
    this.length = this.buffer.writeUInt16BE(value, this.length);
  }

  int16(value: number, what = 'int16'): void {
    checkInteger(value, -0x8000, 0x7fff, what);
    this.ensure(2);
    this.length = this.buffer.writeInt16BE(value, this.length);
  }

  long(value: number, what = 'long'): void {
    checkInteger(value, 0, 0xffff_ffff, what);
    this.ensure(4);
    this.length = this.buffer.writeUInt32BE(value, this.length);
  }

  int32(value: number, what = 'int32'): void {
    checkInteger(value, -0x8000_0000, 0x7fff_ffff, what);
    this.ensure(4);
    this.length = this.buffer.writeInt32BE(value, this.length);
  }

  /** Unsigned 64-bit from a JS number, which must be a safe integer. */
  longlongNumber(value: number, what = 'longlong'): void {
    checkInteger(value, 0, Number.MAX_SAFE_INTEGER, what);
    this.ensure(8);
    this.buffer.writeUInt32BE(Math.floor(value / 0x1_0000_0000), this.length);
    this.length = this.buffer.writeUInt32BE(value % 0x1_0000_0000, this.length + 4);
  }

  longlongBig(value: bigint, what = 'longlong'): void {
    if (typeof value !== 'bigint' || value < 0n || value > 0xffff_ffff_ffff_ffffn) {
      throw encodeInvalid(`${what} must be a bigint in [0, 2^64-1], got ${String(value)}`);
    }
    this.ensure(8);
    this.length = this.buffer.writeBigUInt64BE(value, this.length);
  }

  int64(value: bigint, what = 'int64'): void {
    if (typeof value !== 'bigint' || value < -(2n ** 63n) || value >= 2n ** 63n) {
      throw encodeInvalid(`${what} must be a bigint in [-2^63, 2^63-1], got ${String(value)}`);
    }
    this.ensure(8);
    this.length = this.buffer.writeBigInt64BE(value, this.length);
  }

  float(value: number, what = 'float'): void {
    if (typeof value !== 'number') throw encodeInvalid(`${what} must be a number`);
    this.ensure(4);
    this.length = this.buffer.writeFloatBE(value, this.length);
  }

  double(value: number, what = 'double'): void {
    if (typeof value !== 'number') throw encodeInvalid(`${what} must be a number`);
    this.ensure(8);
    this.length = this.buffer.writeDoubleBE(value, this.length);
  }

  bytes(value: Uint8Array): void {
    this.ensure(value.length);
    this.buffer.set(value, this.length);
    this.length += value.length;
  }

  /** shortstr: octet length + UTF-8 bytes; more than 255 bytes cannot be expressed. */
  shortString(value: string, what = 'short string'): void {
    if (typeof value !== 'string') throw encodeInvalid(`${what} must be a string`);
    const byteLength = Buffer.byteLength(value, 'utf8');
    if (byteLength > 0xff) throw encodeInvalid(`${what} is ${byteLength} bytes; a short string holds at most 255`);
    this.ensure(1 + byteLength);
    this.buffer[this.length++] = byteLength;
    this.length += this.buffer.write(value, this.length, byteLength, 'utf8');
  }

  /** longstr: long length + bytes. A string is written as UTF-8. */
  longString(value: Uint8Array | string, what = 'long string'): void {
    if (typeof value === 'string') {
      const byteLength = Buffer.byteLength(value, 'utf8');
      this.long(byteLength, `${what} length`);
      this.ensure(byteLength);
      this.length += this.buffer.write(value, this.length, byteLength, 'utf8');
      return;
    }
    if (!(value instanceof Uint8Array)) throw encodeInvalid(`${what} must be a Buffer or a string`);
    this.long(value.length, `${what} length`);
    this.bytes(value);
  }

  /** Reserves a 32-bit length to be filled in by `patchLong` once the content is written. */
  reserveLong(): number {
    this.ensure(4);
    const at = this.length;
    this.length += 4;
    return at;
  }

  patchLong(at: number, value: number, what = 'length'): void {
    checkInteger(value, 0, 0xffff_ffff, what);
    this.buffer.writeUInt32BE(value, at);
  }

  /** The written bytes. The writer must not be used afterwards: they share memory. */
  finish(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

/**
 * Cuts text to fit a short string (255 UTF-8 bytes) without splitting a code
 * point: reply-text built from queue names and messages can exceed it, and
 * a close must still go out.
 */
export function truncateShortString(text: string): string {
  if (Buffer.byteLength(text, 'utf8') <= 0xff) return text;
  let result = '';
  let bytes = 0;
  for (const codePoint of text) {
    const size = Buffer.byteLength(codePoint, 'utf8');
    if (bytes + size > 0xff) break;
    result += codePoint;
    bytes += size;
  }
  return result;
}
