/**
 * MongoDB query semantics over the collections' JSON documents, for the HTTP
 * API, through mingo (kofrasa/mingo, MIT, no dependencies; chosen over sift
 * because it also does sort, skip, limit and projection with MongoDB's rules).
 * Pure: no I/O, no clock; a query is parsed and checked once, then run over
 * any number of documents (collection-query.ts feeds it documents read from
 * the log, in chunks).
 *
 * What MongoDB does, mingo does here: a field that holds an array matches a
 * value its elements hold (`{"tags": "a"}`), `$elemMatch`, `$in`/`$nin`/`$all`,
 * `$regex` (+ `$options`), `$exists`, `$type`, `$size`, `$mod`, `$not`,
 * `$and`/`$or`/`$nor`, comparisons with type bracketing (25 never matches
 * "30"), dotted paths into objects and arrays (`a.b`, `a.0`), MongoDB's sort
 * order across types, and inclusion/exclusion projections with `$slice` and
 * `$elemMatch`.
 *
 * What is left out, on purpose: `$where` and `$function` (scripts), `$expr`
 * and aggregation expressions (an expression such as `$range` can allocate
 * without bound inside the broker process) and `$jsonSchema`. The mingo
 * context is built from the query and projection operators only, so they are
 * "unknown operators", never silently ignored.
 *
 * A known departure (mingo 7.2): where a path meets an array inside an
 * array (`{b: [{a: [2.5]}]}` for `b.a`, or `[[1]]`), `$in` and plain equality
 * can disagree with each other and with MongoDB. Collections rarely hold
 * nested arrays; the property test keeps away from them (see there).
 *
 * mingo accepts some malformed operands without a word (`{"$in": 1}` fails
 * only when a document is tested); `checkFilter` refuses them first, so a
 * malformed query is always a QueryError whose message says what and where.
 */
import { createRequire } from 'node:module';
import type * as MingoCore from 'mingo/core';
import type * as MingoProjectionOperators from 'mingo/operators/projection';
import type * as MingoQueryOperators from 'mingo/operators/query';
import type * as MingoQueryModule from 'mingo/query';
import type { Projection } from 'mingo/types';
import type { JsonDocument } from '../core/collection-documents.js';

export type { JsonDocument } from '../core/collection-documents.js';

export class QueryError extends Error {
  override readonly name = 'QueryError';
  readonly code = 'EQUERY';
}

export type Predicate = (document: JsonDocument) => boolean;

export interface Query {
  readonly filter: Predicate;
  /** No filter, or `{}`: every document matches, so a count or a skip needs no document read. */
  readonly matchesAll: boolean;
  /** `{path: 1 | -1}` in priority order; undefined: input order. */
  readonly sort: Readonly<Record<string, 1 | -1>> | undefined;
  /** Documents to skip after filtering and sorting. */
  readonly skip: number;
  /** Documents to return at most; undefined means no limit. */
  readonly limit: number | undefined;
  readonly projection: Readonly<Record<string, unknown>> | undefined;
}

export interface QueryInput {
  readonly filter?: unknown;
  readonly sort?: unknown;
  readonly skip?: unknown;
  readonly limit?: unknown;
  readonly projection?: unknown;
}

const leftOutOperators = new Set(['$where', '$expr', '$jsonSchema']);

function operatorsOf(module: Readonly<Record<string, unknown>>): Record<`$${string}`, never> {
  return Object.fromEntries(Object.entries(module).filter(([name]) => name.startsWith('$') && !leftOutOperators.has(name))) as Record<`$${string}`, never>;
}

interface Mingo {
  readonly MingoQuery: typeof MingoQueryModule.Query;
  readonly options: ConstructorParameters<typeof MingoQueryModule.Query>[1];
}
let loadedMingo: Mingo | undefined;

/**
 * mingo, loaded by the first query rather than at start-up: its modules cost every broker start ~0.2 s of
 * CPU, and most brokers never run a query. Its CommonJS build, through require, loads synchronously.
 */
function mingo(): Mingo {
  if (loadedMingo !== undefined) return loadedMingo;
  const require = createRequire(import.meta.url);
  const { Context } = require('mingo/core') as typeof MingoCore;
  const queryOperators = require('mingo/operators/query') as typeof MingoQueryOperators;
  const projectionOperators = require('mingo/operators/projection') as typeof MingoProjectionOperators;
  const context = Context.init({ query: operatorsOf(queryOperators), projection: operatorsOf(projectionOperators) });
  loadedMingo = { MingoQuery: (require('mingo/query') as typeof MingoQueryModule).Query, options: { context, scriptEnabled: false, idKey: '_id' } };
  return loadedMingo;
}

/** Parse and check a whole query; throws QueryError. */
export function parseQuery(input: QueryInput): Query {
  const projection = input.projection === undefined ? undefined : parseProjection(input.projection);
  return {
    filter: input.filter === undefined ? () => true : compileFilter(input.filter),
    matchesAll: input.filter === undefined || (isPlainObject(input.filter) && Object.keys(input.filter).length === 0),
    sort: input.sort === undefined ? undefined : parseSort(input.sort),
    skip: input.skip === undefined ? 0 : parseCount('skip', input.skip),
    limit: input.limit === undefined ? undefined : parseCount('limit', input.limit),
    projection,
  };
}

/** Filter, sort, skip, limit and project (so the result may hold fewer fields). The input documents are not modified. */
export function runQuery(query: Query, documents: Iterable<JsonDocument>): JsonDocument[] {
  const matching: JsonDocument[] = [];
  for (const document of documents) if (query.filter(document)) matching.push(document);
  return finishQuery(query, matching);
}

/** Sort, skip, limit and project documents that already passed the filter. */
export function finishQuery(query: Query, matching: JsonDocument[]): JsonDocument[] {
  return libraryCall('the query', () => {
    const projection: Projection<JsonDocument> | undefined = query.projection;
    const { MingoQuery, options } = mingo();
    let cursor = new MingoQuery<JsonDocument>({}, options).find<JsonDocument>(matching, projection);
    if (query.sort !== undefined) cursor = cursor.sort(query.sort);
    if (query.skip > 0) cursor = cursor.skip(query.skip);
    if (query.limit !== undefined) cursor = cursor.limit(query.limit);
    return cursor.all();
  });
}

/** `documents` in `sort` order (MongoDB's order across types); stable: equal keys keep their input order. */
export function sortDocuments(sort: Readonly<Record<string, 1 | -1>>, documents: JsonDocument[]): JsonDocument[] {
  const { MingoQuery, options } = mingo();
  return libraryCall('the sort', () => new MingoQuery<JsonDocument>({}, options).find<JsonDocument>(documents).sort(sort).all());
}

/** How many documents the filter matches. */
export function countMatching(query: Query, documents: Iterable<JsonDocument>): number {
  let count = 0;
  for (const document of documents) if (query.filter(document)) count++;
  return count;
}

/** Turn a filter object into a predicate; throws QueryError when it is malformed. */
export function compileFilter(filter: unknown): Predicate {
  checkFilter(filter, 'the filter');
  const { MingoQuery, options } = mingo();
  const query = libraryCall('the filter', () => new MingoQuery(filter as Record<string, unknown>, options));
  return (document) => libraryCall('the filter', () => query.test(document));
}

export function parseSort(sort: unknown): Record<string, 1 | -1> {
  if (!isPlainObject(sort) || Object.keys(sort).length === 0) throw new QueryError(`sort must be a JSON object like {"field": 1} or {"field": -1}, got ${describe(sort)}`);
  for (const [field, direction] of Object.entries(sort)) {
    checkPath(field);
    if (direction !== 1 && direction !== -1) throw new QueryError(`sort direction of '${field}' must be 1 or -1, got ${describe(direction)}`);
  }
  return sort as Record<string, 1 | -1>;
}

function parseProjection(projection: unknown): Record<string, unknown> {
  if (!isPlainObject(projection)) throw new QueryError(`projection must be a JSON object like {"field": 1} or {"field": 0}, got ${describe(projection)}`);
  for (const field of Object.keys(projection)) checkPath(field);
  // mingo checks a projection (inclusion mixed with exclusion, unknown operators) when it first applies it.
  const { MingoQuery, options } = mingo();
  libraryCall('the projection', () => new MingoQuery({}, options).find([{}], projection).all());
  return projection;
}

function parseCount(name: string, value: unknown): number {
  const number = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 0) {
    throw new QueryError(`${name} must be a non-negative integer, got ${describe(value)}`);
  }
  return number;
}

/** Run mingo on user input: what it throws is about that input, and becomes a one-line QueryError. */
function libraryCall<T>(what: string, call: () => T): T {
  try {
    return call();
  } catch (error: unknown) {
    if (error instanceof QueryError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new QueryError(`${what} is not valid: ${message.split('\n')[0]!}`);
  }
}

// ─────────────────────────── operand checks ───────────────────────────

const arrayOperators = new Set(['$in', '$nin', '$all']);
const logicalOperators = new Set(['$and', '$or', '$nor']);

/** A filter is an object of field conditions and $and/$or/$nor; refuse operands MongoDB refuses. */
function checkFilter(filter: unknown, where: string): void {
  if (!isPlainObject(filter)) throw new QueryError(`${where} must be a JSON object, got ${describe(filter)}`);
  for (const [key, condition] of Object.entries(filter)) {
    if (logicalOperators.has(key)) {
      if (!Array.isArray(condition) || condition.length === 0) throw new QueryError(`${key} needs a non-empty array of filters, got ${describe(condition)}`);
      condition.forEach((inner, index) => checkFilter(inner, `${key}[${index}]`));
    } else if (!key.startsWith('$')) {
      checkPath(key);
      if (isOperatorObject(condition)) checkOperators(key, condition);
    }
    // Any other $-key is left to mingo, which names it as an unknown top-level operator.
  }
}

function checkOperators(field: string, condition: Record<string, unknown>): void {
  for (const [operator, operand] of Object.entries(condition)) {
    if (arrayOperators.has(operator) && !Array.isArray(operand)) throw new QueryError(`${operator} on '${field}' needs an array, got ${describe(operand)}`);
    if (operator === '$regex' && typeof operand !== 'string') throw new QueryError(`$regex on '${field}' needs a string, got ${describe(operand)}`);
    if (operator === '$options' && typeof operand !== 'string') throw new QueryError(`$options on '${field}' needs a string of regex flags, got ${describe(operand)}`);
    if (operator === '$size' && !(typeof operand === 'number' && Number.isSafeInteger(operand) && operand >= 0)) throw new QueryError(`$size on '${field}' needs a non-negative integer, got ${describe(operand)}`);
    if (operator === '$mod' && !(Array.isArray(operand) && operand.length === 2 && operand.every((n) => typeof n === 'number'))) throw new QueryError(`$mod on '${field}' needs [divisor, remainder], got ${describe(operand)}`);
    if (operator === '$elemMatch') {
      if (!isPlainObject(operand)) throw new QueryError(`$elemMatch on '${field}' needs an object, got ${describe(operand)}`);
      if (isOperatorObject(operand)) checkOperators(field, operand);
      else checkFilter(operand, `$elemMatch on '${field}'`);
    }
    if (operator === '$not') {
      if (!isOperatorObject(operand)) throw new QueryError(`$not on '${field}' needs an operator object such as {"$gt": 1}, got ${describe(operand)}`);
      checkOperators(field, operand);
    }
  }
}

function checkPath(field: string): void {
  if (field.split('.').some((part) => part === '')) throw new QueryError(`field path '${field}' has an empty part: write paths like 'a.b.c'`);
}

// ─────────────────────────── helpers ───────────────────────────

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isOperatorObject(value: unknown): value is Record<string, unknown> {
  return isPlainObject(value) && Object.keys(value).some((key) => key.startsWith('$'));
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array (${truncate(JSON.stringify(value))})`;
  if (typeof value === 'object') return `an object (${truncate(JSON.stringify(value))})`;
  return `${typeof value} ${truncate(JSON.stringify(value) ?? String(value))}`;
}

function truncate(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
