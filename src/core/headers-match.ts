/**
 * The headers exchange's matcher: does a message's `headers` table satisfy a
 * binding's arguments? RabbitMQ's rules (rabbit_exchange_type_headers), which
 * the AMQP 0-9-1 spec leaves loose:
 *
 * - `x-match` says how the binding's other entries combine: `all` (the
 *   default, also when x-match is absent) or `any`. With plain all/any, binding
 *   entries whose name starts with `x-` are not conditions; `all-with-x` and
 *   `any-with-x` (RabbitMQ 3.10) count them too. x-match itself never counts.
 * - An entry whose value is void ('V') asks only that the header be present.
 *   Otherwise the header must be present with an equal value: equality is on
 *   values, not type tags (Erlang's `==`), so int8 1, long 1 and double 1.0 are
 *   equal; a string never equals a number.
 * - `all` with no conditions matches every message; `any` with none matches none.
 *
 * Pure: no broker state. The property test (test/property/headers-match.test.ts)
 * checks it against a direct reading of these rules.
 */
import type { FieldTable, FieldValue } from '../protocols/amqp/codec/index.js';
import { BrokerError } from './api.js';

export const xMatchModes = ['all', 'any', 'all-with-x', 'any-with-x'] as const;
export type XMatchMode = (typeof xMatchModes)[number];

/** The binding's x-match, checked as RabbitMQ checks it when the binding is made (406 for anything else). */
export function xMatchOf(args: FieldTable): XMatchMode {
  const field = args['x-match'];
  if (field === undefined) return 'all';
  const text = field.type === 'S' ? (typeof field.value === 'string' ? field.value : field.value.toString('latin1')) : undefined;
  if (text === undefined || !(xMatchModes as readonly string[]).includes(text)) {
    throw new BrokerError(406, `PRECONDITION_FAILED - Invalid x-match field value ${describeField(field)}; expected all, any, all-with-x, or any-with-x`);
  }
  return text as XMatchMode;
}

export function headersMatch(args: FieldTable, headers: FieldTable | undefined, mode: XMatchMode = xMatchOf(args)): boolean {
  const all = mode === 'all' || mode === 'all-with-x';
  const withX = mode === 'all-with-x' || mode === 'any-with-x';
  for (const name of Object.keys(args)) {
    if (name === 'x-match' || (!withX && name.startsWith('x-'))) continue;
    const wanted = args[name]!;
    const present = headers?.[name];
    const holds = present !== undefined && (wanted.type === 'V' || fieldValuesEqual(wanted, present));
    if (all && !holds) return false;
    if (!all && holds) return true;
  }
  return all;
}

/** Value equality across type tags, as Erlang's `==` compares RabbitMQ's decoded table values. */
export function fieldValuesEqual(a: FieldValue, b: FieldValue): boolean {
  const left = comparable(a);
  const right = comparable(b);
  if (left.kind !== right.kind) return false;
  switch (left.kind) {
    case 'number': return left.value === (right as typeof left).value;
    case 'bytes': return left.value.equals((right as typeof left).value);
    case 'array': {
      const other = (right as typeof left).value;
      return left.value.length === other.length && left.value.every((value, index) => fieldValuesEqual(value, other[index]!));
    }
    case 'table': {
      const other = (right as typeof left).value;
      const names = Object.keys(left.value);
      return names.length === Object.keys(other).length && names.every((name) => other[name] !== undefined && fieldValuesEqual(left.value[name]!, other[name]!));
    }
    default: return left.value === (right as typeof left).value;
  }
}

type Comparable =
  | { readonly kind: 'number'; readonly value: number | bigint }
  | { readonly kind: 'bytes'; readonly value: Buffer }
  | { readonly kind: 'array'; readonly value: readonly FieldValue[] }
  | { readonly kind: 'table'; readonly value: FieldTable }
  | { readonly kind: 'boolean' | 'void' | 'decimal' | 'timestamp'; readonly value: unknown };

function comparable(field: FieldValue): Comparable {
  switch (field.type) {
    case 'S': return { kind: 'bytes', value: typeof field.value === 'string' ? Buffer.from(field.value, 'utf8') : field.value };
    case 'x': return { kind: 'bytes', value: field.value };
    case 'A': return { kind: 'array', value: field.value };
    case 'F': return { kind: 'table', value: field.value };
    case 't': return { kind: 'boolean', value: field.value };
    case 'V': return { kind: 'void', value: null };
    case 'D': return { kind: 'decimal', value: `${field.value.digits}e-${field.value.scale}` };
    case 'T': return { kind: 'timestamp', value: field.value };
    // Integers and floats: one numeric kind. A bigint equal to a safe integer compares as that number.
    case 'l': return { kind: 'number', value: Number.isSafeInteger(Number(field.value)) ? Number(field.value) : field.value };
    default: return { kind: 'number', value: field.value };
  }
}

function describeField(field: FieldValue): string {
  if (field.type === 'S') return `<<"${String(field.value)}">>`;
  return `of type '${field.type}'`;
}
