/**
 * Conversions between plain JS values and tagged field values, for the two
 * places where the tags are noise: tables the server builds itself
 * (server-properties, capabilities, x-death) and arguments the broker reads
 * (x-message-ttl may arrive as 'b', 'I', 'l', ...).
 *
 * Plain → tagged, chosen to match what RabbitMQ's clients expect:
 *   string → S, boolean → t, integer in int32 range → I, other safe integer → l,
 *   other number → d, bigint → l, Buffer → x, null/undefined → V,
 *   array → A, object → F.
 * Plain objects are never mixed with tagged ones: an object is always a table,
 * so build tagged values directly when a specific type matters.
 */
import { encodeInvalid } from './errors.js';
import { FIELD_NESTING_DEPTH_MAX, type FieldTable, type FieldValue } from './field-codec.js';

export type PlainFieldValue =
  | string
  | boolean
  | number
  | bigint
  | Buffer
  | null
  | undefined
  | readonly PlainFieldValue[]
  | { readonly [name: string]: PlainFieldValue };

const INT32_MIN = -0x8000_0000;
const INT32_MAX = 0x7fff_ffff;

function toNumberField(value: number): FieldValue {
  if (Number.isInteger(value) && value >= INT32_MIN && value <= INT32_MAX) return { type: 'I', value };
  if (Number.isSafeInteger(value)) return { type: 'l', value: BigInt(value) };
  return { type: 'd', value };
}

function toFieldValueAt(value: PlainFieldValue, depth: number): FieldValue {
  if (depth > FIELD_NESTING_DEPTH_MAX) throw encodeInvalid('plain value nests too deep (or is cyclic)');
  switch (typeof value) {
    case 'string': return { type: 'S', value };
    case 'boolean': return { type: 't', value };
    case 'number': return toNumberField(value);
    case 'bigint': return { type: 'l', value };
    case 'undefined': return { type: 'V', value: null };
    case 'object':
      if (value === null) return { type: 'V', value: null };
      if (Buffer.isBuffer(value)) return { type: 'x', value };
      if (Array.isArray(value)) {
        const items = value as readonly PlainFieldValue[];
        return { type: 'A', value: items.map((item) => toFieldValueAt(item, depth + 1)) };
      }
      return { type: 'F', value: toFieldTableAt(value as { readonly [name: string]: PlainFieldValue }, depth + 1) };
    default:
      throw encodeInvalid(`cannot put a ${typeof value} in a field table`);
  }
}

function toFieldTableAt(plain: { readonly [name: string]: PlainFieldValue }, depth: number): FieldTable {
  const table: Record<string, FieldValue> = {};
  for (const name of Object.keys(plain)) {
    const value = toFieldValueAt(plain[name], depth);
    if (name === '__proto__') {
      Object.defineProperty(table, name, { value, enumerable: true, writable: true, configurable: true });
    } else {
      table[name] = value;
    }
  }
  return table;
}

/** Tags a plain JS value (see the mapping at the top of this file). */
export function toFieldValue(value: PlainFieldValue): FieldValue {
  return toFieldValueAt(value, 0);
}

/** Tags every value of a plain object, recursively. */
export function toFieldTable(plain: { readonly [name: string]: PlainFieldValue }): FieldTable {
  return toFieldTableAt(plain, 0);
}

/**
 * The value of any integer-typed field (b B s u I i l) as a number, or
 * undefined when the field is absent, not an integer type, or too large to be
 * a safe JS integer. RabbitMQ accepts x-arguments in any integer type.
 */
export function integerOf(field: FieldValue | undefined): number | undefined {
  if (field === undefined) return undefined;
  switch (field.type) {
    case 'b': case 'B': case 's': case 'u': case 'I': case 'i':
      return field.value;
    case 'l':
      return field.value >= BigInt(Number.MIN_SAFE_INTEGER) && field.value <= BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(field.value)
        : undefined;
    default:
      return undefined;
  }
}

/** The text of an 'S' field, or undefined when absent, not a long string, or not UTF-8. */
export function stringOf(field: FieldValue | undefined): string | undefined {
  return field?.type === 'S' && typeof field.value === 'string' ? field.value : undefined;
}

/** The value of a 't' field, or undefined when absent or not a boolean. */
export function booleanOf(field: FieldValue | undefined): boolean | undefined {
  return field?.type === 't' ? field.value : undefined;
}
