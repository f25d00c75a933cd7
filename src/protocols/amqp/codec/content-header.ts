/**
 * Content header frame payloads and basic-class properties (spec 4.2.6).
 *
 *   0          2        4                 12
 *   +----------+--------+-----------------+---------------------+---------------+
 *   | class-id | weight | body-size       | property-flags      | property list |
 *   | short    | short=0| longlong        | short, repeated     | present props |
 *   |          |        |                 | while bit 0 is set  | in flag order |
 *   +----------+--------+-----------------+---------------------+---------------+
 *                                          \______________ raw properties ______/
 *
 * Property flags go from bit 15 (first property) downwards; bit 0 set means
 * another flags word follows. The basic class defines 14 properties (bits
 * 15..2), so a set bit outside them is a 502 syntax error.
 *
 * A broker need not model properties: it keeps the raw bytes, stores them and
 * sends them back byte for byte. decodeContentHeader therefore only validates
 * their structure (cheaply, without building anything) and hands back a copy;
 * decodeProperties and deliveryModeOf read them when the broker must look.
 * The layout is always the basic class's: it is the only class with content
 * in 0-9-1, and whether a header's class matches its method is the
 * connection's check (505 UNEXPECTED_FRAME), not the codec's.
 */
import { ByteReader } from './byte-reader.js';
import { ByteWriter } from './byte-writer.js';
import { AmqpCodecError, CODEC_ERROR_CODE, encodeInvalid } from './errors.js';
import { readFieldTable, skipFieldTable, writeFieldTable, type FieldTable } from './field-codec.js';
import { writeFrame } from './frame.js';
import { FRAME_TYPE } from './spec.js';

/** Basic-class properties in wire order ("basic" <field> elements of the XML). */
export const BASIC_PROPERTY_DEFINITIONS = [
  ['contentType', 'shortstr'],
  ['contentEncoding', 'shortstr'],
  ['headers', 'table'],
  ['deliveryMode', 'octet'],
  ['priority', 'octet'],
  ['correlationId', 'shortstr'],
  ['replyTo', 'shortstr'],
  ['expiration', 'shortstr'],
  ['messageId', 'shortstr'],
  ['timestamp', 'timestamp'],
  ['type', 'shortstr'],
  ['userId', 'shortstr'],
  ['appId', 'shortstr'],
  ['clusterId', 'shortstr'],
] as const;

type PropertyType = (typeof BASIC_PROPERTY_DEFINITIONS)[number][1];

interface PropertyValues {
  shortstr: string;
  table: FieldTable;
  octet: number;
  /** Seconds since the epoch; a number like method longlongs (values above 2^53-1 are rejected). */
  timestamp: number;
}

/** Decoded basic properties; an absent property is an absent key. */
export type BasicProperties = {
  readonly [P in (typeof BASIC_PROPERTY_DEFINITIONS)[number] as P[0]]?: PropertyValues[P[1]];
};

/** delivery-mode values (basic class, spec 1.8.2.x "delivery-mode"). */
export const DELIVERY_MODE = {
  TRANSIENT: 1,
  PERSISTENT: 2,
} as const;

export interface ContentHeader {
  readonly classId: number;
  readonly bodySize: number;
  /** Property flags and property list, exactly as received (a copy). */
  readonly rawProperties: Buffer;
}

const PROPERTY_COUNT = BASIC_PROPERTY_DEFINITIONS.length;
const CONTINUATION_BIT = 0x0001;
/** Bits 15..2: the flags the basic class owns in the first word. */
const KNOWN_FLAGS_MASK = 0xfffc;
const HEADER_FIXED_BYTES = 12;

function flagOf(index: number): number {
  return 1 << (15 - index);
}

/** Reads the flag words and returns the first one; later words must be empty. */
function readPropertyFlags(reader: ByteReader): number {
  const flags = reader.short('property flags');
  let word = flags;
  while ((word & CONTINUATION_BIT) !== 0) {
    word = reader.short('property flags continuation');
    if ((word & ~CONTINUATION_BIT) !== 0) throw unknownFlags(word);
  }
  if ((flags & ~KNOWN_FLAGS_MASK & ~CONTINUATION_BIT) !== 0) throw unknownFlags(flags);
  return flags;
}

function unknownFlags(word: number): AmqpCodecError {
  return new AmqpCodecError(
    CODEC_ERROR_CODE.PROPERTY_FLAGS_INVALID,
    `property flags 0x${word.toString(16)} name a property the basic class does not have`,
  );
}

function skipProperty(reader: ByteReader, type: PropertyType): void {
  switch (type) {
    case 'shortstr': reader.slice(reader.octet('property length'), 'property'); return;
    case 'table': skipFieldTable(reader); return;
    case 'octet': reader.octet('property'); return;
    case 'timestamp': reader.slice(8, 'timestamp property'); return;
  }
}

/** Checks that raw properties are well formed, without building anything. */
export function validateProperties(raw: Buffer): void {
  const reader = new ByteReader(raw);
  const flags = readPropertyFlags(reader);
  for (let index = 0; index < PROPERTY_COUNT; index++) {
    if ((flags & flagOf(index)) !== 0) skipProperty(reader, BASIC_PROPERTY_DEFINITIONS[index]![1]);
  }
  reader.expectEnd('property list');
}

/** Decodes a content header frame payload; the properties are validated and copied, not decoded. */
export function decodeContentHeader(payload: Buffer): ContentHeader {
  const reader = new ByteReader(payload);
  const classId = reader.short('content header class id');
  // Spec: "weight ... is not used and must be zero". RabbitMQ rejects anything else too.
  const weight = reader.short('content header weight');
  if (weight !== 0) {
    throw new AmqpCodecError(CODEC_ERROR_CODE.HEADER_WEIGHT_INVALID, `content header weight is ${weight}, not 0`);
  }
  const bodySize = reader.longlongNumber('content body size');
  // One pooled allocation and a copy (Buffer.from(view) costs two Buffer constructions per message).
  const rawProperties = Buffer.allocUnsafe(payload.length - HEADER_FIXED_BYTES);
  payload.copy(rawProperties, 0, HEADER_FIXED_BYTES);
  validateProperties(rawProperties);
  return { classId, bodySize, rawProperties };
}

function readProperty(reader: ByteReader, type: PropertyType, label: string): PropertyValues[PropertyType] {
  switch (type) {
    case 'shortstr': return reader.shortString(label);
    case 'table': return readFieldTable(reader);
    case 'octet': return reader.octet(label);
    case 'timestamp': return reader.longlongNumber(label);
  }
}

/** Decodes raw properties (flags + list) into named values. */
export function decodeProperties(raw: Buffer): BasicProperties {
  const reader = new ByteReader(raw);
  const flags = readPropertyFlags(reader);
  const properties: Record<string, unknown> = {};
  for (let index = 0; index < PROPERTY_COUNT; index++) {
    if ((flags & flagOf(index)) === 0) continue;
    const [name, type] = BASIC_PROPERTY_DEFINITIONS[index]!;
    properties[name] = readProperty(reader, type, `${name} property`);
  }
  reader.expectEnd('property list');
  return properties as BasicProperties;
}

/**
 * delivery-mode without decoding the rest: the broker needs it for every
 * publish (persistent messages go to disk) and nothing else. It skips the
 * three properties before it by their length prefixes.
 */
export function deliveryModeOf(raw: Buffer): number | undefined {
  const reader = new ByteReader(raw);
  const flags = readPropertyFlags(reader);
  const deliveryModeIndex = 3;
  if ((flags & flagOf(deliveryModeIndex)) === 0) return undefined;
  if ((flags & flagOf(0)) !== 0) reader.slice(reader.octet('content-type length'), 'content-type');
  if ((flags & flagOf(1)) !== 0) reader.slice(reader.octet('content-encoding length'), 'content-encoding');
  if ((flags & flagOf(2)) !== 0) reader.slice(reader.long('headers length'), 'headers');
  return reader.octet('delivery-mode');
}

function writeProperty(writer: ByteWriter, type: PropertyType, value: unknown, label: string): void {
  switch (type) {
    case 'shortstr': return writer.shortString(value as string, label);
    case 'table': return writeFieldTable(writer, value as FieldTable);
    case 'octet': return writer.octet(value as number, label);
    case 'timestamp': return writer.longlongNumber(value as number, label);
  }
}

/** Appends raw properties (flags + list) to `writer`. */
export function writeProperties(writer: ByteWriter, properties: BasicProperties): void {
  const values = properties as Readonly<Record<string, unknown>>;
  let flags = 0;
  for (let index = 0; index < PROPERTY_COUNT; index++) {
    if (values[BASIC_PROPERTY_DEFINITIONS[index]![0]] !== undefined) flags |= flagOf(index);
  }
  writer.short(flags);
  for (let index = 0; index < PROPERTY_COUNT; index++) {
    const [name, type] = BASIC_PROPERTY_DEFINITIONS[index]!;
    const value = values[name];
    if (value !== undefined) writeProperty(writer, type, value, `${name} property`);
  }
}

/** Encodes properties into raw form (flags + list), as stored and as sent. */
export function encodeProperties(properties: BasicProperties): Buffer {
  const writer = new ByteWriter(64);
  writeProperties(writer, properties);
  return writer.finish();
}

function writeContentHeader(writer: ByteWriter, classId: number, bodySize: number, rawProperties: Uint8Array): void {
  if (!(rawProperties instanceof Uint8Array) || rawProperties.length < 2) {
    throw encodeInvalid('raw properties must hold at least the property flags');
  }
  writer.short(classId, 'content header class id');
  writer.short(0, 'content header weight');
  writer.longlongNumber(bodySize, 'content body size');
  writer.bytes(rawProperties);
}

/** Encodes a content header frame payload around raw properties, byte for byte. */
export function encodeContentHeader(classId: number, bodySize: number, rawProperties: Uint8Array): Buffer {
  const writer = new ByteWriter(HEADER_FIXED_BYTES + rawProperties.length);
  writeContentHeader(writer, classId, bodySize, rawProperties);
  return writer.finish();
}

/** Appends a whole content header frame to `writer`. */
export function writeContentHeaderFrame(
  writer: ByteWriter,
  channel: number,
  classId: number,
  bodySize: number,
  rawProperties: Uint8Array,
): void {
  writeFrame(writer, FRAME_TYPE.HEADER, channel, (payloadWriter) =>
    writeContentHeader(payloadWriter, classId, bodySize, rawProperties),
  );
}
