/**
 * Method frame payloads (spec 4.2.4), encoded and decoded by one generic
 * loop driven by METHOD_DEFINITIONS instead of a function per method.
 *
 *   +----------------+-----------------+---------------------------------+
 *   | class-id short | method-id short | arguments, in definition order  |
 *   +----------------+-----------------+---------------------------------+
 *
 * Bits (spec 4.2.5.2): consecutive bit arguments share octets, filled from
 * the low bit up; any other argument, or the ninth bit, starts a new octet.
 * Unused high bits are ignored on decode and written as zero.
 *
 * Decoding is strict: the payload must hold exactly the arguments (trailing
 * bytes are a 501 frame error, as RabbitMQ's "cannot decode" is); an unknown
 * class/method pair is 540 NOT_IMPLEMENTED. Errors carry the class and method
 * ids so connection.close can name the offending method.
 */
import { AssertionError } from '../../../assert.js';
import { ByteReader } from './byte-reader.js';
import { ByteWriter } from './byte-writer.js';
import { AmqpCodecError, CODEC_ERROR_CODE, encodeInvalid } from './errors.js';
import { readFieldTable, writeFieldTable, type FieldTable } from './field-codec.js';
import { writeFrame } from './frame.js';
import {
  METHOD_DEFINITIONS,
  type MethodDefinition,
  type MethodFieldType,
} from './method-definitions.js';
import type { AmqpMethod, AmqpMethodInput, AmqpMethodName } from './method-types.js';
import { FRAME_TYPE } from './spec.js';

/** A definition prepared for the hot path: labels for error messages built once. */
interface CompiledField {
  readonly name: string | null;
  readonly type: MethodFieldType;
  readonly label: string;
}

interface CompiledMethod {
  readonly definition: MethodDefinition;
  readonly fields: readonly CompiledField[];
}

function compile(definition: MethodDefinition): CompiledMethod {
  const fields = definition.fields.map(([name, type], index) => ({
    name,
    type,
    label: `${definition.name} argument ${name ?? `#${index + 1} (reserved)`}`,
  }));
  return { definition, fields };
}

function methodKey(classId: number, methodId: number): number {
  return classId * 0x1_0000 + methodId;
}

const BY_ID = new Map<number, CompiledMethod>();
const BY_NAME = new Map<string, CompiledMethod>();
for (const definition of METHOD_DEFINITIONS as readonly MethodDefinition[]) {
  const compiled = compile(definition);
  BY_ID.set(methodKey(definition.classId, definition.methodId), compiled);
  BY_NAME.set(definition.name, compiled);
}

/** The definition of a method by name, or undefined for a name Cairn does not know. */
export function methodDefinition(name: string): MethodDefinition | undefined {
  return BY_NAME.get(name)?.definition;
}

/** The definition of a method by ids, or undefined for an unknown pair. */
export function methodDefinitionById(classId: number, methodId: number): MethodDefinition | undefined {
  return BY_ID.get(methodKey(classId, methodId))?.definition;
}

/** True when a content header and body frames follow this method (spec 4.2.6). */
export function hasContent(name: AmqpMethodName): boolean {
  return BY_NAME.get(name)?.definition.hasContent === true;
}

function readArgument(reader: ByteReader, field: CompiledField): unknown {
  switch (field.type) {
    case 'octet': return reader.octet(field.label);
    case 'short': return reader.short(field.label);
    case 'long': return reader.long(field.label);
    case 'longlong': return reader.longlongNumber(field.label);
    case 'shortstr': return reader.shortString(field.label);
    case 'longstr': return reader.longBytes(field.label);
    case 'table': return readFieldTable(reader);
    case 'bit': throw new AssertionError('bits are read by readArguments');
  }
}

function readArguments(reader: ByteReader, compiled: CompiledMethod, into: Record<string, unknown>): void {
  let bits = 0;
  let nextBit = 8; // 8: no octet of bits is open
  for (const field of compiled.fields) {
    let value: unknown;
    if (field.type === 'bit') {
      if (nextBit === 8) {
        bits = reader.octet(field.label);
        nextBit = 0;
      }
      value = ((bits >> nextBit++) & 1) === 1;
    } else {
      nextBit = 8;
      value = readArgument(reader, field);
    }
    if (field.name !== null) into[field.name] = value;
  }
}

/** Decodes a method frame payload. Throws AmqpCodecError (501, 502 or 540). */
export function decodeMethod(payload: Buffer): AmqpMethod {
  const reader = new ByteReader(payload);
  const classId = reader.short('method class id');
  const methodId = reader.short('method id');
  const compiled = BY_ID.get(methodKey(classId, methodId));
  if (compiled === undefined) {
    throw new AmqpCodecError(CODEC_ERROR_CODE.METHOD_UNKNOWN, `unknown method ${classId}.${methodId}`, {
      classId,
      methodId,
    });
  }
  const method: Record<string, unknown> = { name: compiled.definition.name, classId, methodId };
  try {
    readArguments(reader, compiled, method);
    reader.expectEnd(compiled.definition.name);
  } catch (error: unknown) {
    if (error instanceof AmqpCodecError) throw error.withMethod(classId, methodId);
    throw error;
  }
  // Sound by construction: the fields just read are exactly those of the definition.
  return method as AmqpMethod;
}

const RESERVED_VALUES: Record<MethodFieldType, unknown> = {
  octet: 0,
  short: 0,
  long: 0,
  longlong: 0,
  shortstr: '',
  longstr: Buffer.alloc(0),
  bit: false,
  table: {},
};

function writeArgument(writer: ByteWriter, field: CompiledField, value: unknown): void {
  switch (field.type) {
    case 'octet': return writer.octet(value as number, field.label);
    case 'short': return writer.short(value as number, field.label);
    case 'long': return writer.long(value as number, field.label);
    case 'longlong': return writer.longlongNumber(value as number, field.label);
    case 'shortstr': return writer.shortString(value as string, field.label);
    case 'longstr':
      if (!Buffer.isBuffer(value)) throw encodeInvalid(`${field.label} must be a Buffer`);
      return writer.longString(value, field.label);
    case 'table': return writeFieldTable(writer, value as FieldTable);
    case 'bit': throw new AssertionError('bits are written by writeArguments');
  }
}

function writeArguments(writer: ByteWriter, compiled: CompiledMethod, method: Record<string, unknown>): void {
  let bits = 0;
  let bitCount = 0;
  const flushBits = (): void => {
    if (bitCount > 0) writer.octet(bits);
    bits = 0;
    bitCount = 0;
  };
  for (const field of compiled.fields) {
    const value = field.name === null ? RESERVED_VALUES[field.type] : method[field.name];
    if (field.type === 'bit') {
      if (typeof value !== 'boolean') throw encodeInvalid(`${field.label} must be a boolean`);
      if (bitCount === 8) flushBits();
      if (value) bits |= 1 << bitCount;
      bitCount++;
    } else {
      flushBits();
      writeArgument(writer, field, value);
    }
  }
  flushBits();
}

function compiledFor(method: AmqpMethodInput): CompiledMethod {
  const compiled = BY_NAME.get((method as { name?: unknown }).name as string);
  if (compiled === undefined) throw encodeInvalid(`unknown method name ${String(method.name)}`);
  return compiled;
}

/** Appends a method frame payload to `writer`. */
export function writeMethod(writer: ByteWriter, method: AmqpMethodInput): void {
  const compiled = compiledFor(method);
  writer.short(compiled.definition.classId);
  writer.short(compiled.definition.methodId);
  writeArguments(writer, compiled, method as unknown as Record<string, unknown>);
}

/** Encodes a method frame payload (class id, method id, arguments). */
export function encodeMethod(method: AmqpMethodInput): Buffer {
  const writer = new ByteWriter(64);
  writeMethod(writer, method);
  return writer.finish();
}

/** Appends a whole method frame to `writer`. */
export function writeMethodFrame(writer: ByteWriter, channel: number, method: AmqpMethodInput): void {
  writeFrame(writer, FRAME_TYPE.METHOD, channel, (payloadWriter) => writeMethod(payloadWriter, method));
}

/** Encodes a whole method frame, ready for the socket. */
export function encodeMethodFrame(channel: number, method: AmqpMethodInput): Buffer {
  const writer = new ByteWriter(64);
  writeMethodFrame(writer, channel, method);
  return writer.finish();
}
