/**
 * A fast MessagePack encoder for record bodies on the append path, straight
 * into the memory the frame is composed in (checksum.ts, frameScratch): no
 * copy of the body out of an encoder's own buffer, no view of it per record.
 * The mirror of body-decoder.ts.
 *
 * It writes the subset Cairn's bodies are made of (nil, booleans, numbers,
 * well-formed strings, Uint8Array binary, arrays, plain objects) byte for byte
 * as @msgpack/msgpack's Encoder (default options) writes them, and gives up on
 * anything else (lone surrogates, dates and other extensions, class
 * instances, other typed arrays, bigint, deep nesting, a body that does not
 * fit) by returning `unsupported`: the caller then encodes the body with the
 * library, so the bytes are always the library's. test/property/body-encoder
 * checks that on random values.
 */
import { writeAsciiPrefix } from '../utf8-bytes.js';

/** Returned when the body uses something this encoder leaves to @msgpack/msgpack. */
export const unsupported = -1;

/** Deeper bodies go to the library (which refuses beyond its own limit). */
const nestingMax = 32;

/** Thrown (and caught in encodeBodyInto only) to abandon the fast path; never escapes. */
class Unsupported {}
const giveUp = new Unsupported();

const emptyBytes = new Uint8Array(0);
const emptyView = new DataView(emptyBytes.buffer);
let bytes: Uint8Array = emptyBytes;
let view: DataView = emptyView;
let position = 0;
let end = 0;

/**
 * Encodes `body` at `offset` of `target` (`targetView` a DataView over all of
 * it), writing nothing at or past `limit`; returns where the encoding ends, or
 * `unsupported` (the bytes written from `offset` on are then garbage).
 */
export function encodeBodyInto(target: Uint8Array, targetView: DataView, offset: number, limit: number, body: unknown): number {
  bytes = target;
  view = targetView;
  position = offset;
  end = limit;
  try {
    encodeValue(body, 0);
    return position;
  } catch {
    // giveUp, or whatever a body's getter threw: the library meets that again and reports it.
    return unsupported;
  } finally {
    bytes = emptyBytes;
    view = emptyView;
  }
}

function room(count: number): void {
  if (position + count > end) throw giveUp;
}

function encodeValue(value: unknown, depth: number): void {
  if (value === null || value === undefined) return writeByte(0xc0);
  switch (typeof value) {
    case 'boolean':
      return writeByte(value ? 0xc3 : 0xc2);
    case 'number':
      return encodeNumber(value);
    case 'string':
      return encodeString(value);
    case 'object':
      if (depth >= nestingMax) throw giveUp;
      if (value instanceof Uint8Array) return encodeBinary(value);
      if (Array.isArray(value)) return encodeArray(value as unknown[], depth);
      return encodeMap(value, depth);
    default:
      throw giveUp;
  }
}

function writeByte(byte: number): void {
  room(1);
  bytes[position++] = byte;
}

/** A head byte and a big-endian unsigned integer of `size` bytes (1, 2 or 4). */
function writeHead(head: number, size: 1 | 2 | 4, value: number): void {
  room(1 + size);
  bytes[position] = head;
  if (size === 1) view.setUint8(position + 1, value);
  else if (size === 2) view.setUint16(position + 1, value);
  else view.setUint32(position + 1, value);
  position += 1 + size;
}

/** The library's encodeNumber: the smallest integer format for a safe integer, float 64 for anything else. */
function encodeNumber(value: number): void {
  if (!Number.isSafeInteger(value)) {
    room(9);
    bytes[position] = 0xcb;
    view.setFloat64(position + 1, value);
    position += 9;
    return;
  }
  if (value >= 0) {
    if (value < 0x80) return writeByte(value);
    if (value < 0x100) return writeHead(0xcc, 1, value);
    if (value < 0x10000) return writeHead(0xcd, 2, value);
    if (value < 0x100000000) return writeHead(0xce, 4, value);
    return writeInteger64(0xcf, value);
  }
  if (value >= -0x20) return writeByte(0xe0 | (value + 0x20));
  room(5);
  if (value >= -0x80) {
    bytes[position] = 0xd0;
    view.setInt8(position + 1, value);
    position += 2;
  } else if (value >= -0x8000) {
    bytes[position] = 0xd1;
    view.setInt16(position + 1, value);
    position += 3;
  } else if (value >= -0x80000000) {
    bytes[position] = 0xd2;
    view.setInt32(position + 1, value);
    position += 5;
  } else {
    writeInteger64(0xd3, value);
  }
}

/** uint 64 or int 64 of a safe integer: high then low word, as the library's setUint64/setInt64 split it. */
function writeInteger64(head: number, value: number): void {
  room(9);
  bytes[position] = head;
  view.setUint32(position + 1, Math.floor(value / 0x100000000));
  view.setUint32(position + 5, value >>> 0);
  position += 9;
}

/**
 * ASCII strings in one pass (their UTF-8 length is their length, known before
 * their bytes are written); at the first other character, back to the
 * header and through encodeUtf8String.
 */
function encodeString(value: string): void {
  const start = position;
  const length = value.length;
  writeStringHeader(length);
  room(length);
  if (writeAsciiPrefix(bytes, position, value) < length) {
    position = start;
    return encodeUtf8String(value);
  }
  position += length;
}

function writeStringHeader(byteLength: number): void {
  if (byteLength < 32) writeByte(0xa0 + byteLength);
  else if (byteLength < 0x100) writeHead(0xd9, 1, byteLength);
  else if (byteLength < 0x10000) writeHead(0xda, 2, byteLength);
  else writeHead(0xdb, 4, byteLength);
}

/**
 * Any well-formed string. A lone surrogate goes to the library: it writes one
 * as three bytes of its own below a length threshold and as U+FFFD (through
 * TextEncoder) above it.
 */
function encodeUtf8String(value: string): void {
  const length = value.length;
  let byteLength = 0;
  for (let i = 0; i < length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x80) byteLength += 1;
    else if (code < 0x800) byteLength += 2;
    else if (code < 0xd800 || code > 0xdfff) byteLength += 3;
    else if (code <= 0xdbff && (value.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      byteLength += 4;
      i++;
    } else throw giveUp;
  }
  writeStringHeader(byteLength);
  room(byteLength);
  for (let i = 0; i < length; i++) {
    let code = value.charCodeAt(i);
    if (code < 0x80) {
      bytes[position++] = code;
    } else if (code < 0x800) {
      bytes[position++] = 0xc0 | (code >> 6);
      bytes[position++] = 0x80 | (code & 0x3f);
    } else if (code < 0xd800 || code > 0xdfff) {
      bytes[position++] = 0xe0 | (code >> 12);
      bytes[position++] = 0x80 | ((code >> 6) & 0x3f);
      bytes[position++] = 0x80 | (code & 0x3f);
    } else {
      code = 0x10000 + ((code & 0x3ff) << 10) + (value.charCodeAt(++i) & 0x3ff);
      bytes[position++] = 0xf0 | (code >> 18);
      bytes[position++] = 0x80 | ((code >> 12) & 0x3f);
      bytes[position++] = 0x80 | ((code >> 6) & 0x3f);
      bytes[position++] = 0x80 | (code & 0x3f);
    }
  }
}

function encodeBinary(value: Uint8Array): void {
  const length = value.length;
  if (length < 0x100) writeHead(0xc4, 1, length);
  else if (length < 0x10000) writeHead(0xc5, 2, length);
  else writeHead(0xc6, 4, length);
  room(length);
  bytes.set(value, position);
  position += length;
}

function encodeArray(value: readonly unknown[], depth: number): void {
  const length = value.length;
  if (length < 16) writeByte(0x90 + length);
  else if (length < 0x10000) writeHead(0xdc, 2, length);
  else writeHead(0xdd, 4, length);
  for (let i = 0; i < length; i++) encodeValue(value[i], depth + 1);
}

/** Plain objects only (a class instance, a Date, a Map... go to the library, which knows its extensions). */
function encodeMap(value: object, depth: number): void {
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) throw giveUp;
  const keys = Object.keys(value);
  const size = keys.length;
  if (size < 16) writeByte(0x80 + size);
  else if (size < 0x10000) writeHead(0xde, 2, size);
  else writeHead(0xdf, 4, size);
  for (const key of keys) {
    encodeString(key);
    encodeValue((value as Record<string, unknown>)[key], depth + 1);
  }
}
