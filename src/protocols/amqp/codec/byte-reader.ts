/**
 * A bounds-checked cursor over a Buffer for the AMQP primitive types
 * (spec 4.2.5: octet, short, long, longlong, shortstr, longstr; all big-endian).
 *
 * Invariant: `offset <= end <= buffer.length`. Every read checks that the
 * bytes exist before touching them and throws a typed TRUNCATED error
 * otherwise, so decoders built on it can never read past their container,
 * never see a RangeError from Node, and never loop without consuming.
 */
import { assert } from '../../../assert.js';
import { AmqpCodecError, CODEC_ERROR_CODE, truncated } from './errors.js';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Decodes UTF-8 and rejects anything that would not survive a round trip
 * (invalid or overlong sequences, encoded surrogates). Lossy decoding could
 * map two different queue names or routing keys onto the same string.
 */
export function decodeUtf8Strict(bytes: Buffer, what: string): string {
  for (let index = 0; index < bytes.length; index++) {
    // ASCII is the common case and needs no validation.
    if (bytes[index]! >= 0x80) return decodeNonAscii(bytes, what);
  }
  return bytes.toString('latin1');
}

function decodeNonAscii(bytes: Buffer, what: string): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new AmqpCodecError(CODEC_ERROR_CODE.UTF8_INVALID, `${what} is not valid UTF-8`);
  }
}

/** The bytes as a string when they are valid UTF-8, otherwise undefined. */
export function tryDecodeUtf8(bytes: Buffer): string | undefined {
  try {
    return decodeUtf8Strict(bytes, 'bytes');
  } catch (error: unknown) {
    if (error instanceof AmqpCodecError) return undefined;
    throw error;
  }
}

export class ByteReader {
  offset: number;
  readonly end: number;

  constructor(
    readonly buffer: Buffer,
    offset = 0,
    end = buffer.length,
  ) {
    assert(offset >= 0 && offset <= end && end <= buffer.length, 'ByteReader bounds out of range');
    this.offset = offset;
    this.end = end;
  }

  get remaining(): number {
    return this.end - this.offset;
  }

  /** Claims `count` bytes and returns where they start; throws TRUNCATED if they are not there. */
  private take(count: number, what: string): number {
    if (count > this.end - this.offset) throw truncated(what);
    const at = this.offset;
    this.offset += count;
    return at;
  }

  octet(what = 'octet'): number {
    return this.buffer[this.take(1, what)]!;
  }

  int8(what = 'int8'): number {
    return this.buffer.readInt8(this.take(1, what));
  }

  short(what = 'short'): number {
    return this.buffer.readUInt16BE(this.take(2, what));
  }

  int16(what = 'int16'): number {
    return this.buffer.readInt16BE(this.take(2, what));
  }

  long(what = 'long'): number {
    return this.buffer.readUInt32BE(this.take(4, what));
  }

  int32(what = 'int32'): number {
    return this.buffer.readInt32BE(this.take(4, what));
  }

  /** Unsigned 64-bit as a bigint: exact, for field tables. */
  longlongBig(what = 'longlong'): bigint {
    return this.buffer.readBigUInt64BE(this.take(8, what));
  }

  int64(what = 'int64'): bigint {
    return this.buffer.readBigInt64BE(this.take(8, what));
  }

  /**
   * Unsigned 64-bit as a JS number. Cairn keeps delivery tags, body sizes and
   * property timestamps as numbers; a value beyond 2^53-1 cannot be held
   * exactly, so it is rejected instead of silently rounded.
   */
  longlongNumber(what = 'longlong'): number {
    const at = this.take(8, what);
    const high = this.buffer.readUInt32BE(at);
    // 2^53-1 has 21 bits in the high word.
    if (high > 0x1f_ffff) {
      const value = this.buffer.readBigUInt64BE(at);
      throw new AmqpCodecError(CODEC_ERROR_CODE.VALUE_OUT_OF_RANGE, `${what} ${value} exceeds 2^53-1`);
    }
    return high * 0x1_0000_0000 + this.buffer.readUInt32BE(at + 4);
  }

  float(what = 'float'): number {
    return this.buffer.readFloatBE(this.take(4, what));
  }

  double(what = 'double'): number {
    return this.buffer.readDoubleBE(this.take(8, what));
  }

  /** A view of the next `count` bytes; it aliases the input. */
  slice(count: number, what: string): Buffer {
    const at = this.take(count, what);
    return this.buffer.subarray(at, at + count);
  }

  /** shortstr: octet length + UTF-8 bytes (spec 4.2.5.3). */
  shortString(what = 'short string'): string {
    const length = this.octet(what);
    return decodeUtf8Strict(this.slice(length, what), what);
  }

  /** longstr: long length + bytes, copied so the result never pins a socket chunk. */
  longBytes(what = 'long string'): Buffer {
    const length = this.long(what);
    return Buffer.from(this.slice(length, what));
  }

  /** A reader over the next `count` bytes, which this reader skips. */
  subReader(count: number, what: string): ByteReader {
    const at = this.take(count, what);
    return new ByteReader(this.buffer, at, at + count);
  }

  /** Throws TRAILING_BYTES unless everything was consumed: RabbitMQ rejects padded frames too. */
  expectEnd(what: string): void {
    if (this.offset !== this.end) {
      throw new AmqpCodecError(
        CODEC_ERROR_CODE.TRAILING_BYTES,
        `cannot decode ${what}: ${this.end - this.offset} unexpected trailing bytes`,
      );
    }
  }
}
