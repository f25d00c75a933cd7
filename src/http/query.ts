/**
 * A small Mongo-like query language over JSON documents, for the HTTP API's
 * collection browser. Pure: no I/O, no clock; a query is parsed (and fully
 * checked) once, then run over any number of documents.
 *
 * Filter: a JSON object; its fields are ANDed. Each field is a path (`value`,
 * `a.b.c`: dots walk into nested objects, never into arrays) mapped to either
 *   - a plain value: deep equality (objects compare key by key, in any key
 *     order; arrays element by element). `null` also matches a missing field,
 *     as in MongoDB.
 *   - an operator object, whose keys all start with `$` (ANDed too):
 *       $gt $gte $lt $lte  a number or a string; compares only with a field
 *                          of the same type (25 never matches "30")
 *       $ne                anything; true when NOT deeply equal (so a missing
 *                          field matches {$ne: 1})
 *       $in                an array; true when deeply equal to one element
 *       $exists            a boolean; whether the field is present (null counts
 *                          as present)
 * Not supported (rejected, never silently ignored): $and/$or/$not and any
 * other operator, array-element matching, regular expressions.
 *
 * Sort: `{path: 1 | -1, ...}`, keys in order of priority. Values of different
 * types order as missing/null < numbers < strings < objects < arrays <
 * booleans (MongoDB's order, reduced to JSON); objects and arrays of the same
 * type compare by their canonical JSON text. Ties keep input order.
 *
 * A malformed query is a QueryError whose message says what is wrong and where.
 */

export type JsonDocument = Readonly<Record<string, unknown>>;

export class QueryError extends Error {
  override readonly name = 'QueryError';
  readonly code = 'EQUERY';
}

export type Predicate = (document: JsonDocument) => boolean;

export interface SortKey {
  readonly path: readonly string[];
  readonly direction: 1 | -1;
}

export interface Query {
  readonly filter: Predicate;
  readonly sort: readonly SortKey[];
  /** Documents to skip after filtering and sorting. */
  readonly skip: number;
  /** Documents to return at most; undefined means no limit. */
  readonly limit: number | undefined;
}

export interface QueryInput {
  readonly filter?: unknown;
  readonly sort?: unknown;
  readonly skip?: unknown;
  readonly limit?: unknown;
}

export const comparisonOperators = ['$gt', '$gte', '$lt', '$lte'] as const;
export const filterOperators = [...comparisonOperators, '$ne', '$in', '$exists'] as const;
export type FilterOperator = (typeof filterOperators)[number];

/** Parse and check a whole query; throws QueryError. */
export function parseQuery(input: QueryInput): Query {
  return {
    filter: input.filter === undefined ? () => true : compileFilter(input.filter),
    sort: input.sort === undefined ? [] : parseSort(input.sort),
    skip: input.skip === undefined ? 0 : parseCount('skip', input.skip),
    limit: input.limit === undefined ? undefined : parseCount('limit', input.limit),
  };
}

/** Filter, sort, skip and limit. The input is not modified. */
export function runQuery<D extends JsonDocument>(query: Query, documents: Iterable<D>): D[] {
  const matching: D[] = [];
  for (const document of documents) if (query.filter(document)) matching.push(document);
  if (query.sort.length > 0) matching.sort((a, b) => compareBySortKeys(query.sort, a, b));
  const end = query.limit === undefined ? undefined : query.skip + query.limit;
  return matching.slice(query.skip, end);
}

/** Turn a filter object into a predicate; throws QueryError when it is malformed. */
export function compileFilter(filter: unknown): Predicate {
  if (!isPlainObject(filter)) throw new QueryError(`the filter must be a JSON object, got ${describe(filter)}`);
  const tests: Predicate[] = [];
  for (const [field, condition] of Object.entries(filter)) {
    if (field.startsWith('$')) throw new QueryError(`unknown top-level operator '${field}': only field conditions are supported (no $and/$or)`);
    const path = parsePath(field);
    tests.push(compileCondition(field, path, condition));
  }
  return (document) => tests.every((test) => test(document));
}

export function parseSort(sort: unknown): SortKey[] {
  if (!isPlainObject(sort)) throw new QueryError(`sort must be a JSON object like {"field": 1} or {"field": -1}, got ${describe(sort)}`);
  return Object.entries(sort).map(([field, direction]) => {
    if (direction !== 1 && direction !== -1) throw new QueryError(`sort direction of '${field}' must be 1 or -1, got ${describe(direction)}`);
    return { path: parsePath(field), direction };
  });
}

function parseCount(name: string, value: unknown): number {
  const number = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 0) {
    throw new QueryError(`${name} must be a non-negative integer, got ${describe(value)}`);
  }
  return number;
}

function parsePath(field: string): string[] {
  const path = field.split('.');
  if (path.some((part) => part === '')) throw new QueryError(`field path '${field}' has an empty part: write paths like 'a.b.c'`);
  return path;
}

function compileCondition(field: string, path: readonly string[], condition: unknown): Predicate {
  if (!isOperatorObject(condition)) return (document) => equalsField(valueAt(document, path), condition);
  const keys = Object.keys(condition);
  const operators = keys.filter((key) => key.startsWith('$'));
  if (operators.length !== keys.length) {
    throw new QueryError(`condition on '${field}' mixes operators and plain fields (${keys.join(', ')}): use either {"$op": value} or a plain value`);
  }
  const tests = Object.entries(condition).map(([operator, operand]) => compileOperator(field, operator, operand));
  return (document) => {
    const value = valueAt(document, path);
    return tests.every((test) => test(value));
  };
}

function compileOperator(field: string, operator: string, operand: unknown): (value: unknown) => boolean {
  switch (operator) {
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      return compileComparison(field, operator, operand);
    case '$ne':
      return (value) => !equalsField(value, operand);
    case '$in': {
      if (!Array.isArray(operand)) throw new QueryError(`$in on '${field}' needs an array, got ${describe(operand)}`);
      const candidates: readonly unknown[] = operand;
      return (value) => candidates.some((candidate) => equalsField(value, candidate));
    }
    case '$exists':
      if (typeof operand !== 'boolean') throw new QueryError(`$exists on '${field}' needs true or false, got ${describe(operand)}`);
      return (value) => (value !== undefined) === operand;
    default:
      throw new QueryError(`unknown operator '${operator}' on '${field}': supported are ${filterOperators.join(', ')}`);
  }
}

function compileComparison(field: string, operator: (typeof comparisonOperators)[number], operand: unknown): (value: unknown) => boolean {
  if (typeof operand !== 'number' && typeof operand !== 'string') {
    throw new QueryError(`${operator} on '${field}' needs a number or a string, got ${describe(operand)}`);
  }
  const accepts = { $gt: (c: number) => c > 0, $gte: (c: number) => c >= 0, $lt: (c: number) => c < 0, $lte: (c: number) => c <= 0 }[operator];
  // Type bracketing as in MongoDB: a number is never compared with a string.
  return (value) => typeof value === typeof operand && accepts(compareSameType(value as number | string, operand));
}

function compareSameType<T extends number | string>(a: T, b: T): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The value at a dotted path; undefined when any step is missing or not an object. */
export function valueAt(document: unknown, path: readonly string[]): unknown {
  let current: unknown = document;
  for (const part of path) {
    if (!isPlainObject(current) || !Object.hasOwn(current, part)) return undefined;
    current = current[part];
  }
  return current;
}

/** Equality of a field with a filter value: deep, and null also matches a missing field. */
function equalsField(value: unknown, expected: unknown): boolean {
  if (expected === null && value === undefined) return true;
  return deepEqual(value, expected);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, index) => deepEqual(item, b[index]));
  }
  if (!isPlainObject(a) || !isPlainObject(b)) return false;
  const keysA = Object.keys(a);
  if (keysA.length !== Object.keys(b).length) return false;
  return keysA.every((key) => Object.hasOwn(b, key) && deepEqual(a[key], b[key]));
}

// ─────────────────────────── sorting ───────────────────────────

function compareBySortKeys(keys: readonly SortKey[], a: JsonDocument, b: JsonDocument): number {
  for (const key of keys) {
    const order = compareValues(valueAt(a, key.path), valueAt(b, key.path)) * key.direction;
    if (order !== 0) return order;
  }
  return 0;
}

/** Rank of a JSON value's type in sort order (MongoDB's, reduced to JSON). */
export function typeRank(value: unknown): number {
  if (value === undefined || value === null) return 0;
  if (typeof value === 'number') return 1;
  if (typeof value === 'string') return 2;
  if (Array.isArray(value)) return 4;
  if (typeof value === 'object') return 3;
  if (typeof value === 'boolean') return 5;
  return 6;
}

/** A total order on JSON values. */
export function compareValues(a: unknown, b: unknown): number {
  const rankA = typeRank(a);
  const rankB = typeRank(b);
  if (rankA !== rankB) return rankA < rankB ? -1 : 1;
  if (typeof a === 'number' && typeof b === 'number') return compareSameType(a, b);
  if (typeof a === 'string' && typeof b === 'string') return compareSameType(a, b);
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  if (rankA === 3 || rankA === 4) return compareSameType(canonicalJson(a), canonicalJson(b));
  return 0;
}

/** JSON text with object keys sorted, so equal values have equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

// ─────────────────────────── helpers ───────────────────────────

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** An object with any key starting with '$' is a condition, not a value to compare (mixing is rejected later). */
function isOperatorObject(value: unknown): value is Record<string, unknown> {
  if (!isPlainObject(value)) return false;
  const keys = Object.keys(value);
  return keys.some((key) => key.startsWith('$'));
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
