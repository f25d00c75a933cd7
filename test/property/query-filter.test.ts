/**
 * Properties of src/http/query.ts against a reference model written
 * differently: field lookup by reduce, equality by comparing key-sorted JSON
 * text, comparisons by an explicit switch, and sorting by a stable insertion
 * sort. Also: any JSON value as a filter either compiles or is a QueryError.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileFilter, parseQuery, QueryError, runQuery, type JsonDocument } from '../../src/http/query.js';

// Print the seed so a failure can be replayed with CAIRN_SEED=<seed>.
const seed = Number(process.env['CAIRN_SEED'] ?? Date.now() % 2_147_483_647);
console.log(`test/property/query-filter: seed ${seed}`);
const runs = { seed, numRuns: 1_000 } as const;

// ───────────── the reference model ─────────────

function referenceLookup(document: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((current, key) => {
    if (current === undefined || current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    return Object.prototype.hasOwnProperty.call(current, key) ? (current as Record<string, unknown>)[key] : undefined;
  }, document);
}

function sortedJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => {
    if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) return inner;
    return Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }) ?? 'undefined';
}

function referenceEquals(value: unknown, expected: unknown): boolean {
  if (expected === null) return value === null || value === undefined;
  return sortedJson(value) === sortedJson(expected);
}

function referenceOperator(operator: string, operand: unknown, value: unknown): boolean {
  switch (operator) {
    case '$ne': return !referenceEquals(value, operand);
    case '$in': return (operand as unknown[]).some((candidate) => referenceEquals(value, candidate));
    case '$exists': return operand === (value !== undefined);
    default: {
      if (typeof value !== typeof operand) return false;
      const a = value as number | string;
      const b = operand as number | string;
      if (operator === '$gt') return a > b;
      if (operator === '$gte') return a >= b;
      if (operator === '$lt') return a < b;
      return a <= b;
    }
  }
}

function referenceMatches(filter: Record<string, unknown>, document: JsonDocument): boolean {
  for (const [path, condition] of Object.entries(filter)) {
    const value = referenceLookup(document, path);
    const isOperators = condition !== null && typeof condition === 'object' && !Array.isArray(condition) && Object.keys(condition).some((key) => key[0] === '$');
    if (isOperators) {
      for (const [operator, operand] of Object.entries(condition as Record<string, unknown>)) {
        if (!referenceOperator(operator, operand, value)) return false;
      }
    } else if (!referenceEquals(value, condition)) return false;
  }
  return true;
}

const rankOrder = ['missing', 'number', 'string', 'object', 'array', 'boolean'];
function referenceRank(value: unknown): number {
  if (value === undefined || value === null) return 0;
  if (Array.isArray(value)) return rankOrder.indexOf('array');
  return rankOrder.indexOf(typeof value);
}

function referenceCompare(a: unknown, b: unknown): number {
  const byRank = referenceRank(a) - referenceRank(b);
  if (byRank !== 0) return Math.sign(byRank);
  if (typeof a === 'number' || typeof a === 'string' || typeof a === 'boolean') return a === b ? 0 : (a as number) < (b as number) ? -1 : 1;
  if (a === undefined || a === null) return 0;
  const textA = sortedJson(a);
  const textB = sortedJson(b);
  return textA === textB ? 0 : textA < textB ? -1 : 1;
}

function referenceSort(documents: JsonDocument[], sort: Array<[string, 1 | -1]>): JsonDocument[] {
  const out: JsonDocument[] = [];
  for (const document of documents) {
    let index = out.length;
    const before = (other: JsonDocument): boolean => {
      for (const [path, direction] of sort) {
        const order = referenceCompare(referenceLookup(document, path), referenceLookup(other, path)) * direction;
        if (order !== 0) return order < 0;
      }
      return false; // ties keep input order
    };
    while (index > 0 && before(out[index - 1]!)) index--;
    out.splice(index, 0, document);
  }
  return out;
}

// ───────────── generators ─────────────

const keyArbitrary = fc.constantFrom('a', 'b', 'c');
const pathArbitrary = fc.constantFrom('a', 'b', 'c', 'a.b', 'a.c', 'b.a', 'a.b.c');
const scalarArbitrary = fc.oneof(
  fc.integer({ min: -3, max: 3 }), fc.constantFrom(2.5, -0.5), fc.constantFrom('', 'a', 'b', 'ab'), fc.boolean(), fc.constant(null),
);
const { value: valueArbitrary } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalarArbitrary,
    fc.dictionary(keyArbitrary, tie('value'), { maxKeys: 3 }),
    fc.array(tie('value'), { maxLength: 3 }),
  ),
}));
const documentArbitrary = fc.dictionary(keyArbitrary, valueArbitrary, { maxKeys: 3 });
const comparableArbitrary = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constantFrom(2.5, 'a', 'b', ''));
const operatorsArbitrary = fc.record(
  {
    $gt: comparableArbitrary, $gte: comparableArbitrary, $lt: comparableArbitrary, $lte: comparableArbitrary,
    $ne: valueArbitrary, $in: fc.array(valueArbitrary, { maxLength: 3 }), $exists: fc.boolean(),
  },
  { requiredKeys: [] },
).filter((operators) => Object.keys(operators).length > 0);
const conditionArbitrary = fc.oneof(valueArbitrary.filter((v) => !(typeof v === 'object' && v !== null && Object.keys(v).some((k) => k.startsWith('$')))), operatorsArbitrary);
const filterArbitrary = fc.dictionary(pathArbitrary, conditionArbitrary, { maxKeys: 3 });
const sortArbitrary = fc.uniqueArray(fc.tuple(pathArbitrary, fc.constantFrom<1 | -1>(1, -1)), { maxLength: 3, selector: ([path]) => path });

// ───────────── properties ─────────────

describe('query filter against the reference model', () => {
  it('a filter matches exactly the documents the reference matches', () => {
    fc.assert(fc.property(filterArbitrary, fc.array(documentArbitrary, { maxLength: 8 }), (filter, documents) => {
      const predicate = compileFilter(filter);
      for (const document of documents) expect(predicate(document)).toBe(referenceMatches(filter, document));
    }), runs);
  });

  it('filter + sort + skip + limit equals the reference pipeline', () => {
    fc.assert(fc.property(
      filterArbitrary, sortArbitrary, fc.nat(5), fc.option(fc.nat(5), { nil: undefined }), fc.array(documentArbitrary, { maxLength: 10 }),
      (filter, sort, skip, limit, documents) => {
        const numbered = documents.map((document, index) => ({ ...document, _id: index + 1 }));
        const query = parseQuery({ filter, sort: Object.fromEntries(sort), skip, ...(limit === undefined ? {} : { limit }) });
        const expected = referenceSort(numbered.filter((d) => referenceMatches(filter, d)), sort).slice(skip, limit === undefined ? undefined : skip + limit);
        expect(runQuery(query, numbered).map((d) => d._id)).toEqual(expected.map((d) => d['_id']));
      },
    ), runs);
  });

  it('any JSON value as filter or sort either parses or is a QueryError, never another error', () => {
    const jsonish = fc.oneof(fc.jsonValue(), fc.dictionary(fc.constantFrom('a', '$gt', '$in', '$exists', '$or', 'a..b', '$ne'), fc.jsonValue(), { maxKeys: 3 }),
      fc.dictionary(pathArbitrary, fc.dictionary(fc.constantFrom('$gt', '$in', '$exists', '$lt', '$foo', 'x'), fc.jsonValue(), { maxKeys: 2 }), { maxKeys: 2 }));
    fc.assert(fc.property(jsonish, jsonish, (filter, sort) => {
      try {
        const query = parseQuery({ filter, sort });
        runQuery(query, [{ a: 1 }, { a: { b: 'x' } }, {}]);
      } catch (error: unknown) {
        expect(error).toBeInstanceOf(QueryError);
      }
    }), runs);
  });
});
