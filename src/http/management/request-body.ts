/**
 * Request bodies of the management API: read with a size bound (by the
 * listener's socket thread, socket-thread.js, which answers 413 past it and
 * forwards only bodies within it), parsed as a JSON object, and read field
 * by field with the types RabbitMQ accepts (rabbitmqadmin sends booleans and
 * counts as strings: "true", "5").
 * Every problem is a 400 whose reason names the field.
 */
import { badRequest } from '../http-error.js';

/** A publish carries the message in the body; beyond this a request is refused (413) before it is read whole. */
export const requestBodyBytesMax = 16 * 1024 * 1024;

export type JsonObject = Readonly<Record<string, unknown>>;

/** An empty body is an empty object (RabbitMQ: a PUT without a body declares with defaults). */
export function parseJsonObject(body: Buffer): JsonObject {
  if (body.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (error: unknown) {
    throw badRequest(`body is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badRequest('body must be a JSON object');
  return value as JsonObject;
}

/** Fields outside `known` are refused, so a typo never goes unnoticed. */
export function refuseUnknownFields(body: JsonObject, known: readonly string[], what: string): void {
  const unknown = Object.keys(body).filter((name) => !known.includes(name));
  if (unknown.length > 0) throw badRequest(`unknown field(s) ${unknown.map((name) => `'${name}'`).join(', ')} in ${what}; accepted: ${known.join(', ')}`);
}

export function booleanField(body: JsonObject, name: string, fallback: boolean): boolean {
  const value = body[name];
  if (value === undefined || value === null) return fallback;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw badRequest(`field '${name}' must be true or false, got ${JSON.stringify(value)}`);
}

export function stringField(body: JsonObject, name: string, fallback?: string): string {
  const value = body[name];
  if (value === undefined || value === null) {
    if (fallback === undefined) throw badRequest(`field '${name}' is required`);
    return fallback;
  }
  if (typeof value !== 'string') throw badRequest(`field '${name}' must be a string, got ${JSON.stringify(value)}`);
  return value;
}

export function integerField(body: JsonObject, name: string, fallback: number | undefined, range: { min: number; max: number }): number {
  const value = body[name];
  if (value === undefined || value === null) {
    if (fallback === undefined) throw badRequest(`field '${name}' is required`);
    return fallback;
  }
  const number = typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < range.min || number > range.max) {
    throw badRequest(`field '${name}' must be an integer from ${range.min} to ${range.max}, got ${JSON.stringify(value)}`);
  }
  return number;
}

export function objectField(body: JsonObject, name: string): JsonObject {
  const value = body[name];
  if (value === undefined || value === null) return {};
  // RabbitMQ writes an empty property list as [] (an Erlang empty list); accept it back.
  if (Array.isArray(value) && value.length === 0) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw badRequest(`field '${name}' must be a JSON object, got ${JSON.stringify(value)}`);
  return value as JsonObject;
}
