/**
 * Field tables as plain JSON, for the management API (client properties,
 * message headers), in the shapes RabbitMQ's API shows: numbers as numbers,
 * 64-bit integers as numbers while they are safe and as decimal strings
 * beyond, decimals as numbers, binary values as base64 text.
 */
import type { FieldTable, FieldValue } from './codec/index.js';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [name: string]: JsonValue };

function bigintJson(value: bigint): number | string {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString();
}

export function plainFieldOf(field: FieldValue): JsonValue {
  switch (field.type) {
    case 'l': case 'T': return bigintJson(field.value);
    case 'D': return field.value.digits / 10 ** field.value.scale;
    case 'S': return typeof field.value === 'string' ? field.value : field.value.toString('base64');
    case 'x': return field.value.toString('base64');
    case 'A': return field.value.map(plainFieldOf);
    case 'F': return plainTableOf(field.value);
    default: return field.value;
  }
}

export function plainTableOf(table: FieldTable): { [name: string]: JsonValue } {
  const plain: { [name: string]: JsonValue } = {};
  for (const [name, field] of Object.entries(table)) {
    Object.defineProperty(plain, name, { value: plainFieldOf(field), enumerable: true, writable: true, configurable: true });
  }
  return plain;
}
