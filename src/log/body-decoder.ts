/**
 * A fast MessagePack decoder for record bodies on the replay path, straight
 * from the read chunk: no view per record, binary values copied out (so they
 * neither alias nor pin the reused chunk), short ASCII strings interned.
 *
 * It handles the subset Cairn's bodies are made of (nil, booleans, numbers,
 * ASCII strings, binary, arrays, maps with string keys) and gives up on
 * anything else (extensions, non-ASCII strings, other map keys, `__proto__`,
 * deep nesting, a malformed body) by returning `unsupported`: the caller then
 * decodes the same bytes with @msgpack/msgpack, so the result is always what
 * the library would give. test/property/body-decoder checks that on random
 * values.
 *
 * Interning: the same client ids, queue names and topics recur in almost
 * every record; returning one string object for them spares an allocation and
 * lets Map lookups reuse the string's cached hash. Strings are immutable, so
 * sharing them is invisible to callers.
 */

/** Returned when the body uses something this decoder leaves to @msgpack/msgpack. */
export const unsupported: unique symbol = Symbol('unsupported');

/** Deeper bodies go to the library (its explicit stack has no recursion limit). */
const nestingMax = 32;
/** Strings up to this many bytes are interned. */
const internBytesMax = 32;
const internSlots = 4096;
const internMask = internSlots - 1;
const internBytes: Array<Uint8Array | undefined> = new Array<Uint8Array | undefined>(internSlots).fill(undefined);
const internStrings: string[] = new Array<string>(internSlots).fill('');

/** Map keys are mostly one letter: those strings are made once. */
const oneCharStrings: readonly string[] = Array.from({ length: 0x80 }, (_, code) => String.fromCharCode(code));

/** Thrown (and caught in decodeBody only) to abandon the fast path; never escapes. */
class Unsupported {}
const giveUp = new Unsupported();

let bytes: Uint8Array = new Uint8Array(0);
let view: DataView = new DataView(bytes.buffer);
let position = 0;
let end = 0;

/**
 * Decodes the MessagePack value filling [offset, offset + length) of `source`,
 * or returns `unsupported`. `source` must be a plain Uint8Array, not a Buffer
 * (Buffer#slice makes a view, not the copy binary values need); `sourceView`
 * is a DataView over all of it. Both are made once per chunk by the caller.
 */
export function decodeBody(source: Uint8Array, sourceView: DataView, offset: number, length: number): unknown {
  bytes = source;
  view = sourceView;
  position = offset;
  end = offset + length;
  try {
    const value = decodeValue(0);
    return position === end ? value : unsupported;
  } catch (error) {
    if (error === giveUp) return unsupported;
    throw error;
  } finally {
    // Drop the chunk so a finished read does not keep it alive.
    bytes = emptyBytes;
    view = emptyView;
  }
}
const emptyBytes = new Uint8Array(0);
const emptyView = new DataView(emptyBytes.buffer);

function need(count: number): void {
  if (position + count > end) throw giveUp;
}

function decodeValue(depth: number): unknown {
  need(1);
  const head = bytes[position++]!;
  if (head < 0x80) return head;
  if (head < 0x90) return decodeMap(head - 0x80, depth);
  if (head < 0xa0) return decodeArray(head - 0x90, depth);
  if (head < 0xc0) return decodeString(head - 0xa0);
  if (head >= 0xe0) return head - 0x100;
  switch (head) {
    case 0xc0: return null;
    case 0xc2: return false;
    case 0xc3: return true;
    case 0xc4: return decodeBinary(readLength(1));
    case 0xc5: return decodeBinary(readLength(2));
    case 0xc6: return decodeBinary(readLength(4));
    case 0xca: need(4); position += 4; return view.getFloat32(position - 4);
    case 0xcb: need(8); position += 8; return view.getFloat64(position - 8);
    case 0xcc: return readLength(1);
    case 0xcd: return readLength(2);
    case 0xce: return readLength(4);
    // 64-bit integers as numbers, high word times 2^32 plus low word: the library's arithmetic exactly.
    case 0xcf: need(8); position += 8; return view.getUint32(position - 8) * 0x1_0000_0000 + view.getUint32(position - 4);
    case 0xd0: need(1); position += 1; return view.getInt8(position - 1);
    case 0xd1: need(2); position += 2; return view.getInt16(position - 2);
    case 0xd2: need(4); position += 4; return view.getInt32(position - 4);
    case 0xd3: need(8); position += 8; return view.getInt32(position - 8) * 0x1_0000_0000 + view.getUint32(position - 4);
    case 0xd9: return decodeString(readLength(1));
    case 0xda: return decodeString(readLength(2));
    case 0xdb: return decodeString(readLength(4));
    case 0xdc: return decodeArray(readLength(2), depth);
    case 0xdd: return decodeArray(readLength(4), depth);
    case 0xde: return decodeMap(readLength(2), depth);
    case 0xdf: return decodeMap(readLength(4), depth);
    default: throw giveUp;
  }
}

/** A big-endian unsigned length (or uint) of `width` bytes. */
function readLength(width: 1 | 2 | 4): number {
  need(width);
  const at = position;
  position += width;
  if (width === 1) return bytes[at]!;
  if (width === 2) return view.getUint16(at);
  return view.getUint32(at);
}

function decodeArray(size: number, depth: number): unknown[] {
  if (depth >= nestingMax || size > end - position) throw giveUp;
  const array = new Array<unknown>(size);
  for (let i = 0; i < size; i++) array[i] = decodeValue(depth + 1);
  return array;
}

function decodeMap(size: number, depth: number): Record<string, unknown> {
  if (depth >= nestingMax || size > end - position) throw giveUp;
  const map: Record<string, unknown> = {};
  for (let i = 0; i < size; i++) {
    need(1);
    const head = bytes[position++]!;
    let key: string;
    if (head >= 0xa0 && head < 0xc0) key = decodeString(head - 0xa0);
    else if (head === 0xd9) key = decodeString(readLength(1));
    else throw giveUp;
    if (key === '__proto__') throw giveUp;
    map[key] = decodeValue(depth + 1);
  }
  return map;
}

/**
 * Binary values up to this size are copied into a shared pool rather than
 * each into its own ArrayBuffer (a small ArrayBuffer costs ~0.5 µs to make
 * and collect: as much as the rest of a record's replay). Node's Buffer pools
 * the same way (8 KiB pools, for sizes below 4 KiB), with the same trade-off:
 * a payload kept in the state keeps its whole pool alive. So the memory a
 * replay leaves held is at most one pool per retained payload and at most the
 * bytes of all payloads replayed: with 100-byte payloads of which 1 in 10 stays
 * queued, every pool stays alive (~10× the retained payload bytes) until those
 * messages are consumed.
 */
const pooledBytesMax = 1024;
const poolBytes = 8 * 1024;
let pool = new ArrayBuffer(poolBytes);
let poolUsed = 0;

function decodeBinary(length: number): Uint8Array {
  need(length);
  const start = position;
  position += length;
  if (length > pooledBytesMax) return bytes.slice(start, start + length);
  if (poolUsed + length > poolBytes) {
    pool = new ArrayBuffer(poolBytes);
    poolUsed = 0;
  }
  const copy = new Uint8Array(pool, poolUsed, length);
  copy.set(bytes.subarray(start, start + length));
  // Keep 8-byte alignment, as Node's pool does.
  poolUsed += (length + 7) & ~7;
  return copy;
}

function decodeString(length: number): string {
  need(length);
  const start = position;
  position += length;
  if (length === 1) {
    const byte = bytes[start]!;
    if (byte >= 0x80) throw giveUp;
    return oneCharStrings[byte]!;
  }
  if (length === 0) return '';
  if (length > internBytesMax) return decodeAscii(start, length);
  // FNV-1a over the bytes, checking they are ASCII on the way.
  let hash = 0x811c9dc5 ^ length;
  let high = 0;
  for (let i = start; i < start + length; i++) {
    const byte = bytes[i]!;
    high |= byte;
    hash = Math.imul(hash ^ byte, 0x01000193);
  }
  if (high >= 0x80) throw giveUp;
  const slot = (hash ^ (hash >>> 15)) & internMask;
  const known = internBytes[slot];
  if (known !== undefined && known.length === length) {
    let same = true;
    for (let i = 0; i < length; i++) {
      if (known[i] !== bytes[start + i]) {
        same = false;
        break;
      }
    }
    if (same) return internStrings[slot]!;
  }
  const text = asciiString(start, length);
  internBytes[slot] = bytes.slice(start, start + length);
  internStrings[slot] = text;
  return text;
}

function decodeAscii(start: number, length: number): string {
  for (let i = start; i < start + length; i++) if (bytes[i]! >= 0x80) throw giveUp;
  return asciiString(start, length);
}

const textDecoder = new TextDecoder();
/** For ASCII, UTF-8 decoding is the identity on code units; fromCharCode is faster for short strings, TextDecoder for long ones. */
function asciiString(start: number, length: number): string {
  if (length <= 64) return String.fromCharCode.apply(null, bytes.subarray(start, start + length) as unknown as number[]);
  return textDecoder.decode(bytes.subarray(start, start + length));
}
