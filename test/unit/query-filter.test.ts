/**
 * Unit tests of src/http/query.ts: documented MongoDB behaviours, each as an
 * example with its expected answer (from MongoDB's manual: "Query an Array",
 * "Query on Embedded/Nested Documents", $elemMatch, $in, $regex, $exists,
 * "Query for Null or Missing Fields", comparison/sort order, projection), and
 * the exact messages of malformed queries. The first case is the article's
 * ingest example: {"value": {"$gte": 25}} over sensor_readings.
 */
import { describe, expect, it } from 'vitest';
import { compileFilter, countMatching, parseQuery, QueryError, runQuery, type JsonDocument } from '../../src/http/query.js';

const sensorReadings: JsonDocument[] = [
  { value: 27.3, unit: 'C', _topic: 'sensors/greenhouse/temp', _received_at: 1791754335817, _id: 1 },
  { value: 71, unit: '%', _topic: 'sensors/greenhouse/humidity', _received_at: 1791754335830, _id: 2 },
  { payload: 18.9, _topic: 'sensors/garage/temp', _received_at: 1791754335839, _id: 3 },
];

function find(filter: unknown, documents: readonly JsonDocument[] = sensorReadings): unknown[] {
  return runQuery(parseQuery({ filter }), documents).map((document) => document['_id']);
}

function ids(input: Parameters<typeof parseQuery>[0], documents: readonly JsonDocument[]): unknown[] {
  return runQuery(parseQuery(input), documents).map((document) => document['_id']);
}

function errorOf(action: () => unknown): QueryError {
  try {
    action();
  } catch (error: unknown) {
    expect(error).toBeInstanceOf(QueryError);
    return error as QueryError;
  }
  throw new Error('expected a QueryError');
}

describe('the article\'s ingest example', () => {
  it('{"value": {"$gte": 25}} returns the greenhouse temperature and humidity, not the wrapped 18.9', () => {
    const found = runQuery(parseQuery({ filter: { value: { $gte: 25 } } }), sensorReadings);
    expect(found.map((d) => [d['_topic'], d['value'], d['unit']])).toEqual([
      ['sensors/greenhouse/temp', 27.3, 'C'],
      ['sensors/greenhouse/humidity', 71, '%'],
    ]);
  });

  it('{} returns every document', () => {
    expect(find({})).toEqual([1, 2, 3]);
  });
});

describe('arrays', () => {
  const documents: JsonDocument[] = [
    { _id: 1, tags: ['a', 'b'], results: [82, 85, 88], items: [{ k: 1, v: 2 }, { k: 2, v: 5 }] },
    { _id: 2, tags: ['c'], results: [75, 88, 89], items: [{ k: 2, v: 1 }] },
    { _id: 3, tags: 'a', results: [5, 25] },
    { _id: 4 },
  ];

  it('a value matches an array field holding it, and a plain field equal to it', () => {
    expect(find({ tags: 'a' }, documents)).toEqual([1, 3]);
    expect(find({ tags: 'c' }, documents)).toEqual([2]);
  });

  it('an array value matches the exact array only, in order', () => {
    expect(find({ tags: ['a', 'b'] }, documents)).toEqual([1]);
    expect(find({ tags: ['b', 'a'] }, documents)).toEqual([]);
  });

  it('conditions on an array without $elemMatch may be met by different elements', () => {
    // MongoDB manual: [5, 25] matches {$gt: 15, $lt: 20}: 25 > 15 and 5 < 20.
    expect(find({ results: { $gt: 15, $lt: 20 } }, documents)).toEqual([3]);
  });

  it('$elemMatch needs one element meeting every condition', () => {
    expect(find({ results: { $elemMatch: { $gte: 80, $lt: 85 } } }, documents)).toEqual([1]);
    expect(find({ items: { $elemMatch: { k: 2, v: { $gt: 4 } } } }, documents)).toEqual([1]);
    expect(find({ 'items.k': 2, 'items.v': 1 }, documents)).toEqual([2]);
  });

  it('a dotted path walks through arrays of documents and by index', () => {
    expect(find({ 'items.k': 2 }, documents)).toEqual([1, 2]);
    expect(find({ 'items.0.k': 1 }, documents)).toEqual([1]);
    expect(find({ 'results.1': 88 }, documents)).toEqual([2]);
  });

  it('$in matches a field or any element of an array field; $nin is its complement', () => {
    expect(find({ tags: { $in: ['c', 'z'] } }, documents)).toEqual([2]);
    expect(find({ tags: { $nin: ['a'] } }, documents)).toEqual([2, 4]);
    expect(find({ tags: { $all: ['b', 'a'] } }, documents)).toEqual([1]);
    expect(find({ results: { $size: 2 } }, documents)).toEqual([3]);
  });
});

describe('fields, null, types', () => {
  const documents: JsonDocument[] = [
    { _id: 1, n: 1, s: 'apple', nested: { a: { b: 1 } } },
    { _id: 2, n: 2, s: 'Avocado', nested: { a: { b: 2 } } },
    { _id: 3, n: '3', s: null, nested: { a: 5 } },
    { _id: 4 },
  ];

  it('{field: null} matches null and missing; $exists counts null as present', () => {
    expect(find({ s: null }, documents)).toEqual([3, 4]);
    expect(find({ s: { $exists: true } }, documents)).toEqual([1, 2, 3]);
    expect(find({ s: { $exists: false } }, documents)).toEqual([4]);
    expect(find({ s: { $type: 'null' } }, documents)).toEqual([3]);
  });

  it('embedded documents: a whole-document match is exact, a dotted path reaches a field', () => {
    expect(find({ nested: { a: { b: 2 } } }, documents)).toEqual([2]);
    expect(find({ 'nested.a': { b: 1 } }, documents)).toEqual([1]);
    expect(find({ 'nested.a.b': { $gte: 2 } }, documents)).toEqual([2]);
    expect(find({ 'nested.a.b': { $exists: false } }, documents)).toEqual([3, 4]);
  });

  it('comparisons only between values of the same type (type bracketing)', () => {
    expect(find({ n: { $gt: 1 } }, documents)).toEqual([2]);
    expect(find({ n: { $gte: '0' } }, documents)).toEqual([3]);
    expect(find({ n: { $gt: 0, $lt: 2 } }, documents)).toEqual([1]);
  });

  it('$ne matches a missing field; $in compares by type too', () => {
    expect(find({ n: { $ne: 1 } }, documents)).toEqual([2, 3, 4]);
    expect(find({ n: { $in: [2, '3', 7] } }, documents)).toEqual([2, 3]);
  });

  it('$regex with $options, and $not', () => {
    expect(find({ s: { $regex: '^a' } }, documents)).toEqual([1]);
    expect(find({ s: { $regex: '^a', $options: 'i' } }, documents)).toEqual([1, 2]);
    expect(find({ n: { $not: { $gt: 1 } } }, documents)).toEqual([1, 3, 4]);
  });

  it('$and, $or, $nor', () => {
    expect(find({ $or: [{ n: 1 }, { s: null }] }, documents)).toEqual([1, 3, 4]);
    expect(find({ $and: [{ n: { $gte: 1 } }, { n: { $lte: 1 } }] }, documents)).toEqual([1]);
    expect(find({ $nor: [{ n: 1 }, { s: null }] }, documents)).toEqual([2]);
  });
});

describe('sort, skip, limit, projection, count', () => {
  const documents: JsonDocument[] = [
    { _id: 1, v: 3, g: 'b' }, { _id: 2, v: 1, g: 'a' }, { _id: 3, g: 'a' }, { _id: 4, v: 'x', g: 'b' }, { _id: 5, v: 2, g: 'a' },
  ];

  it('sorts missing < numbers < strings (MongoDB\'s order across types), both directions, on several keys', () => {
    expect(ids({ sort: { v: 1 } }, documents)).toEqual([3, 2, 5, 1, 4]);
    expect(ids({ sort: { v: -1 } }, documents)).toEqual([4, 1, 5, 2, 3]);
    expect(ids({ sort: { g: -1, v: 1 } }, documents)).toEqual([1, 4, 3, 2, 5]);
  });

  it('skips then limits, after sorting', () => {
    expect(ids({ sort: { v: 1 }, skip: 1, limit: 2 }, documents)).toEqual([2, 5]);
    expect(ids({ skip: '4', limit: '10' }, documents)).toEqual([5]);
    expect(ids({ limit: 0 }, documents)).toEqual([]); // unlike MongoDB's cursor.limit(0): zero is zero here
  });

  it('projects: inclusion keeps _id unless excluded, exclusion drops fields, $slice cuts an included array', () => {
    const tagged: JsonDocument[] = [{ _id: 1, a: 1, b: 2, tags: ['x', 'y', 'z'] }];
    expect(runQuery(parseQuery({ projection: { a: 1 } }), tagged)).toEqual([{ _id: 1, a: 1 }]);
    expect(runQuery(parseQuery({ projection: { a: 1, _id: 0 } }), tagged)).toEqual([{ a: 1 }]);
    expect(runQuery(parseQuery({ projection: { b: 0, tags: 0 } }), tagged)).toEqual([{ _id: 1, a: 1 }]);
    expect(runQuery(parseQuery({ projection: { a: 1, tags: { $slice: 2 } } }), tagged)).toEqual([{ _id: 1, a: 1, tags: ['x', 'y'] }]);
  });

  it('counts what the filter matches', () => {
    expect(countMatching(parseQuery({ filter: { g: 'a' } }), documents)).toBe(3);
    expect(countMatching(parseQuery({}), documents)).toBe(5);
  });
});

describe('malformed queries say what is wrong', () => {
  it.each([
    [[], 'the filter must be a JSON object, got an array ([])'],
    [null, 'the filter must be a JSON object, got null'],
    ['value', 'the filter must be a JSON object, got string "value"'],
    [{ value: { $foo: 'a' } }, 'the filter is not valid: unknown query operator $foo'],
    [{ value: { $in: 25 } }, "$in on 'value' needs an array, got number 25"],
    [{ value: { $regex: '(' } }, 'the filter is not valid: Invalid regular expression: /(/: Unterminated group'],
    [{ value: { $regex: 5 } }, "$regex on 'value' needs a string, got number 5"],
    [{ value: { $elemMatch: 1 } }, "$elemMatch on 'value' needs an object, got number 1"],
    [{ $or: [] }, '$or needs a non-empty array of filters, got an array ([])'],
    [{ $or: [{ a: { $nin: 1 } }] }, "$nin on 'a' needs an array, got number 1"],
    [{ $where: 'true' }, "the filter is not valid: $where operator requires 'scriptEnabled' option to be true."],
    [{ $expr: { $gt: ['$a', 1] } }, 'the filter is not valid: unknown query operator $expr'],
    [{ value: { $gt: 1, unit: 'C' } }, 'the filter is not valid: unknown query operator unit'],
    [{ 'a..b': 1 }, "field path 'a..b' has an empty part: write paths like 'a.b.c'"],
  ])('filter %s', (filter, message) => {
    expect(errorOf(() => compileFilter(filter)).message).toBe(message);
  });

  it('bad sort, skip, limit and projection', () => {
    expect(errorOf(() => parseQuery({ sort: { v: 2 } })).message).toBe("sort direction of 'v' must be 1 or -1, got number 2");
    expect(errorOf(() => parseQuery({ sort: 'v' })).message).toBe('sort must be a JSON object like {"field": 1} or {"field": -1}, got string "v"');
    expect(errorOf(() => parseQuery({ skip: -1 })).message).toBe('skip must be a non-negative integer, got number -1');
    expect(errorOf(() => parseQuery({ limit: 'ten' })).message).toBe('limit must be a non-negative integer, got string "ten"');
    expect(errorOf(() => parseQuery({ limit: 1.5 })).code).toBe('EQUERY');
    expect(errorOf(() => parseQuery({ projection: { a: 1, b: 0 } })).message).toMatch(/^the projection is not valid: /);
    expect(errorOf(() => parseQuery({ projection: { a: { $range: [0, 1e9] } } })).message).toMatch(/^the projection is not valid: /);
  });
});
