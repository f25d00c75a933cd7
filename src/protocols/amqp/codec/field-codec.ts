/**
 * Field tables and field arrays (spec 4.2.5.5 with RabbitMQ's errata for the
 * type tags), the format of method arguments, server/client properties and
 * message headers.
 *
 *   field-table  = long-uint byte-length  *( shortstr field-name  field-value )
 *   field-array  = long-uint byte-length  *field-value
 *   field-value  = octet type-tag  value-bytes
 *
 *   tag  type        value bytes                    decoded `value`
 *   t    boolean     octet (non-zero = true)        boolean
 *   b/B  int8/uint8  1                              number
 *   s/u  int16/16    2                              number
 *   I/i  int32/32    4 (I signed, i unsigned)       number
 *   l    int64       8 signed                       bigint
 *   f/d  float/dbl   4 / 8 IEEE 754                 number
 *   D    decimal     octet scale + long-uint digits { scale, digits }
 *   S    longstr     long-uint length + bytes       string (valid UTF-8) or Buffer
 *   x    byte array  long-uint length + bytes       Buffer
 *   A    array       field-array                    FieldValue[]
 *   T    timestamp   8 unsigned (seconds)           bigint
 *   F    table       field-table                    FieldTable
 *   V    void        nothing                        null
 *
 * Why tagged values: a broker echoes tables back (queue arguments, headers
 * exchange bindings, x-death) and must not turn a client's 'b' into an 'I' or a
 * uint32 into an int32, so every value keeps its tag. 64-bit values are bigints
 * because table contents are user data with no bound we could rely on.
 * 'S' decodes to a string when its bytes are valid UTF-8 (nearly always) and
 * to a Buffer otherwise, so that decoding is lossless either way.
 *
 * Decoded tables are plain objects; a duplicate key keeps its last value
 * (RabbitMQ keeps both, but no client depends on sending duplicates). Decoded
 * Buffers are copies and never alias the input. Nesting is limited to
 * FIELD_NESTING_DEPTH_MAX so hostile input cannot exhaust the stack.
 */
import { ByteReader, tryDecodeUtf8 } from './byte-reader.js';
import { ByteWriter } from './byte-writer.js';
import { AmqpCodecError, CODEC_ERROR_CODE, encodeInvalid } from './errors.js';

/** Tables and arrays nested deeper than this are rejected, on decode and encode. */
export const FIELD_NESTING_DEPTH_MAX = 64;

/** Field-value type tags by name (RabbitMQ's errata for 0-9-1). */
export const FIELD_TYPE = {
  BOOLEAN: 't',
  INT8: 'b',
  UINT8: 'B',
  INT16: 's',
  UINT16: 'u',
  INT32: 'I',
  UINT32: 'i',
  INT64: 'l',
  FLOAT: 'f',
  DOUBLE: 'd',
  DECIMAL: 'D',
  LONG_STRING: 'S',
  BYTE_ARRAY: 'x',
  ARRAY: 'A',
  TIMESTAMP: 'T',
  TABLE: 'F',
  VOID: 'V',
} as const;
export type FieldTypeTag = (typeof FIELD_TYPE)[keyof typeof FIELD_TYPE];

export interface Decimal {
  /** Number of decimal digits after the point. */
  readonly scale: number;
  /** The unscaled value, an unsigned 32-bit integer. */
  readonly digits: number;
}

export type FieldValue =
  | { readonly type: 't'; readonly value: boolean }
  | { readonly type: 'b'; readonly value: number }
  | { readonly type: 'B'; readonly value: number }
  | { readonly type: 's'; readonly value: number }
  | { readonly type: 'u'; readonly value: number }
  | { readonly type: 'I'; readonly value: number }
  | { readonly type: 'i'; readonly value: number }
  | { readonly type: 'l'; readonly value: bigint }
  | { readonly type: 'f'; readonly value: number }
  | { readonly type: 'd'; readonly value: number }
  | { readonly type: 'D'; readonly value: Decimal }
  | { readonly type: 'S'; readonly value: string | Buffer }
  | { readonly type: 'x'; readonly value: Buffer }
  | { readonly type: 'A'; readonly value: readonly FieldValue[] }
  | { readonly type: 'T'; readonly value: bigint }
  | { readonly type: 'F'; readonly value: FieldTable }
  | { readonly type: 'V'; readonly value: null };

export interface FieldTable {
  readonly [name: string]: FieldValue;
}

type ValueDecoder = (reader: ByteReader, depth: number) => FieldValue;

function decodeLongString(reader: ByteReader): FieldValue {
  const bytes = reader.slice(reader.long('long string field value length'), 'long string field value');
  // A copy only for the rare binary value: a string never aliases the input anyway.
  return { type: 'S', value: tryDecodeUtf8(bytes) ?? Buffer.from(bytes) };
}

/** One small decoder per tag, indexed by the tag's character code. */
const VALUE_DECODERS = new Map<number, ValueDecoder>([
  [0x74 /* t */, (reader) => ({ type: 't', value: reader.octet('boolean field value') !== 0 })],
  [0x62 /* b */, (reader) => ({ type: 'b', value: reader.int8('int8 field value') })],
  [0x42 /* B */, (reader) => ({ type: 'B', value: reader.octet('uint8 field value') })],
  [0x73 /* s */, (reader) => ({ type: 's', value: reader.int16('int16 field value') })],
  [0x75 /* u */, (reader) => ({ type: 'u', value: reader.short('uint16 field value') })],
  [0x49 /* I */, (reader) => ({ type: 'I', value: reader.int32('int32 field value') })],
  [0x69 /* i */, (reader) => ({ type: 'i', value: reader.long('uint32 field value') })],
  [0x6c /* l */, (reader) => ({ type: 'l', value: reader.int64('int64 field value') })],
  [0x66 /* f */, (reader) => ({ type: 'f', value: reader.float('float field value') })],
  [0x64 /* d */, (reader) => ({ type: 'd', value: reader.double('double field value') })],
  [
    0x44 /* D */,
    (reader) => ({ type: 'D', value: { scale: reader.octet('decimal scale'), digits: reader.long('decimal digits') } }),
  ],
  [0x53 /* S */, decodeLongString],
  [0x78 /* x */, (reader) => ({ type: 'x', value: reader.longBytes('byte array field value') })],
  [0x41 /* A */, (reader, depth) => ({ type: 'A', value: readFieldArray(reader, depth + 1) })],
  [0x54 /* T */, (reader) => ({ type: 'T', value: reader.longlongBig('timestamp field value') })],
  [0x46 /* F */, (reader, depth) => ({ type: 'F', value: readFieldTable(reader, depth + 1) })],
  [0x56 /* V */, () => ({ type: 'V', value: null })],
]);

function checkDepth(depth: number): void {
  if (depth > FIELD_NESTING_DEPTH_MAX) {
    throw new AmqpCodecError(
      CODEC_ERROR_CODE.NESTING_TOO_DEEP,
      `field tables and arrays nest deeper than ${FIELD_NESTING_DEPTH_MAX}`,
    );
  }
}

export function readFieldValue(reader: ByteReader, depth: number): FieldValue {
  const tag = reader.octet('field value type');
  const decoder = VALUE_DECODERS.get(tag);
  if (decoder === undefined) {
    throw new AmqpCodecError(CODEC_ERROR_CODE.FIELD_TYPE_UNKNOWN, `unknown field value type 0x${tag.toString(16)}`);
  }
  return decoder(reader, depth);
}

/** Reads a length-prefixed field table; `depth` counts enclosing tables and arrays. */
export function readFieldTable(reader: ByteReader, depth = 0): FieldTable {
  checkDepth(depth);
  const body = reader.subReader(reader.long('field table length'), 'field table');
  const table: Record<string, FieldValue> = {};
  while (body.remaining > 0) {
    const name = body.shortString('field name');
    const value = readFieldValue(body, depth);
    if (name === '__proto__') {
      // Plain assignment would replace the object's prototype instead of adding a key.
      Object.defineProperty(table, name, { value, enumerable: true, writable: true, configurable: true });
    } else {
      table[name] = value;
    }
  }
  return table;
}

export function readFieldArray(reader: ByteReader, depth = 0): FieldValue[] {
  checkDepth(depth);
  const body = reader.subReader(reader.long('field array length'), 'field array');
  const values: FieldValue[] = [];
  while (body.remaining > 0) values.push(readFieldValue(body, depth));
  return values;
}

/**
 * Walks a length-prefixed field table without building it, to validate
 * structure cheaply (content headers on the publish hot path). It checks
 * tags, lengths and nesting, not UTF-8.
 */
export function skipFieldTable(reader: ByteReader, depth = 0): void {
  checkDepth(depth);
  const body = reader.subReader(reader.long('field table length'), 'field table');
  while (body.remaining > 0) {
    body.slice(body.octet('field name length'), 'field name');
    skipFieldValue(body, depth);
  }
}

const FIXED_VALUE_BYTES = new Map<number, number>([
  [0x74, 1], [0x62, 1], [0x42, 1], [0x73, 2], [0x75, 2], [0x49, 4], [0x69, 4], [0x6c, 8],
  [0x66, 4], [0x64, 8], [0x44, 5], [0x54, 8], [0x56, 0],
]);

function skipFieldValue(reader: ByteReader, depth: number): void {
  const tag = reader.octet('field value type');
  const fixed = FIXED_VALUE_BYTES.get(tag);
  if (fixed !== undefined) {
    reader.slice(fixed, 'field value');
  } else if (tag === 0x53 /* S */ || tag === 0x78 /* x */) {
    reader.slice(reader.long('field value length'), 'field value');
  } else if (tag === 0x46 /* F */) {
    skipFieldTable(reader, depth + 1);
  } else if (tag === 0x41 /* A */) {
    checkDepth(depth + 1);
    const body = reader.subReader(reader.long('field array length'), 'field array');
    while (body.remaining > 0) skipFieldValue(body, depth + 1);
  } else {
    throw new AmqpCodecError(CODEC_ERROR_CODE.FIELD_TYPE_UNKNOWN, `unknown field value type 0x${tag.toString(16)}`);
  }
}

/** Writes one tagged value; the switch is the only place that maps tags to wire widths. */
export function writeFieldValue(writer: ByteWriter, field: FieldValue, depth: number): void {
  if (typeof field !== 'object' || field === null) throw encodeInvalid('a field value must be a tagged object');
  const tag = typeof field.type === 'string' && field.type.length === 1 ? field.type.charCodeAt(0) : -1;
  if (!VALUE_DECODERS.has(tag)) throw encodeInvalid(`unknown field value type ${String(field.type)}`);
  writer.octet(tag);
  switch (field.type) {
    case 't': return writer.octet(field.value ? 1 : 0);
    case 'b': return writer.int8(field.value, 'int8 field value');
    case 'B': return writer.octet(field.value, 'uint8 field value');
    case 's': return writer.int16(field.value, 'int16 field value');
    case 'u': return writer.short(field.value, 'uint16 field value');
    case 'I': return writer.int32(field.value, 'int32 field value');
    case 'i': return writer.long(field.value, 'uint32 field value');
    case 'l': return writer.int64(field.value, 'int64 field value');
    case 'f': return writer.float(field.value, 'float field value');
    case 'd': return writer.double(field.value, 'double field value');
    case 'D':
      writer.octet(field.value.scale, 'decimal scale');
      return writer.long(field.value.digits, 'decimal digits');
    case 'S': return writer.longString(field.value, 'long string field value');
    case 'x': return writer.longString(field.value, 'byte array field value');
    case 'A': return writeFieldArray(writer, field.value, depth + 1);
    case 'T': return writer.longlongBig(field.value, 'timestamp field value');
    case 'F': return writeFieldTable(writer, field.value, depth + 1);
    case 'V': return;
    default: {
      const unknown: never = field;
      throw encodeInvalid(`unknown field value type ${String((unknown as { type: unknown }).type)}`);
    }
  }
}

export function writeFieldTable(writer: ByteWriter, table: FieldTable, depth = 0): void {
  if (depth > FIELD_NESTING_DEPTH_MAX) throw encodeInvalid('field table nests too deep (or is cyclic)');
  if (typeof table !== 'object' || table === null) throw encodeInvalid('a field table must be an object');
  const lengthAt = writer.reserveLong();
  const start = writer.length;
  for (const name of Object.keys(table)) {
    writer.shortString(name, 'field name');
    writeFieldValue(writer, table[name]!, depth);
  }
  writer.patchLong(lengthAt, writer.length - start, 'field table length');
}

export function writeFieldArray(writer: ByteWriter, values: readonly FieldValue[], depth = 0): void {
  if (depth > FIELD_NESTING_DEPTH_MAX) throw encodeInvalid('field array nests too deep (or is cyclic)');
  if (!Array.isArray(values)) throw encodeInvalid('a field array must be an array');
  const lengthAt = writer.reserveLong();
  const start = writer.length;
  for (const value of values) writeFieldValue(writer, value, depth);
  writer.patchLong(lengthAt, writer.length - start, 'field array length');
}

/** Decodes a whole buffer holding exactly one length-prefixed field table. */
export function decodeFieldTable(bytes: Buffer): FieldTable {
  const reader = new ByteReader(bytes);
  const table = readFieldTable(reader);
  reader.expectEnd('field table');
  return table;
}

/** Encodes a field table, length prefix included. */
export function encodeFieldTable(table: FieldTable): Buffer {
  const writer = new ByteWriter();
  writeFieldTable(writer, table);
  return writer.finish();
}

/** Decodes a whole buffer holding exactly one length-prefixed field array. */
export function decodeFieldArray(bytes: Buffer): FieldValue[] {
  const reader = new ByteReader(bytes);
  const values = readFieldArray(reader);
  reader.expectEnd('field array');
  return values;
}

/** Encodes a field array, length prefix included. */
export function encodeFieldArray(values: readonly FieldValue[]): Buffer {
  const writer = new ByteWriter();
  writeFieldArray(writer, values);
  return writer.finish();
}
