/**
 * Unit tests of src/http/query.ts: each operator, dotted paths, deep equality,
 * sort/skip/limit, and the exact messages of malformed queries. The first case
 * is the article's ingest example: {"value": {"$gte": 25}} over sensor_readings.
 */
import { describe, expect, it } from 'vitest';
import { compileFilter, parseQuery, QueryError, runQuery, type JsonDocument } from '../../src/http/query.js';

const sensorReadings: JsonDocument[] = [
  { value: 27.3, unit: 'C', _topic: 'sensors/greenhouse/temp', _received_at: 1791754335817, _id: 1 },
  { value: 71, unit: '%', _topic: 'sensors/greenhouse/humidity', _received_at: 1791754335830, _id: 2 },
  { payload: 18.9, _topic: 'sensors/garage/temp', _received_at: 1791754335839, _id: 3 },
];

function find(filter: unknown, documents: readonly JsonDocument[] = sensorReadings): unknown[] {
  return runQuery(parseQuery({ filter }), documents).map((document) => document['_id']);
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

describe('operators', () => {
  const documents: JsonDocument[] = [
    { _id: 1, n: 1, s: 'a', tags: ['x', 'y'], nested: { a: { b: 1 } } },
    { _id: 2, n: 2, s: 'b', tags: ['y'], nested: { a: { b: 2 } } },
    { _id: 3, n: '3', s: null, nested: { a: 5 } },
    { _id: 4 },
  ];

  it('equality, including null matching a missing field', () => {
    expect(find({ n: 1 }, documents)).toEqual([1]);
    expect(find({ s: null }, documents)).toEqual([3, 4]);
    expect(find({ n: 1, s: 'b' }, documents)).toEqual([]);
  });

  it('deep equality of objects (key order does not matter) and arrays (order matters)', () => {
    expect(find({ nested: { a: { b: 2 } } }, documents)).toEqual([2]);
    expect(find({ 'nested.a': { b: 1 } }, documents)).toEqual([1]);
    expect(find({ tags: ['x', 'y'] }, documents)).toEqual([1]);
    expect(find({ tags: ['y', 'x'] }, documents)).toEqual([]);
    expect(find({ tags: 'y' }, documents)).toEqual([]); // no array-element matching
  });

  it('comparisons only between values of the same type', () => {
    expect(find({ n: { $gt: 1 } }, documents)).toEqual([2]);
    expect(find({ n: { $gte: 1 } }, documents)).toEqual([1, 2]);
    expect(find({ n: { $lt: 2 } }, documents)).toEqual([1]);
    expect(find({ n: { $lte: 2 } }, documents)).toEqual([1, 2]);
    expect(find({ n: { $gte: '0' } }, documents)).toEqual([3]);
    expect(find({ n: { $gt: 0, $lt: 2 } }, documents)).toEqual([1]);
  });

  it('dotted paths walk nested objects', () => {
    expect(find({ 'nested.a.b': { $gte: 2 } }, documents)).toEqual([2]);
    expect(find({ 'nested.a.b': { $exists: false } }, documents)).toEqual([3, 4]);
  });

  it('$ne, $in, $exists', () => {
    expect(find({ n: { $ne: 1 } }, documents)).toEqual([2, 3, 4]);
    expect(find({ n: { $in: [2, '3', 7] } }, documents)).toEqual([2, 3]);
    expect(find({ s: { $exists: true } }, documents)).toEqual([1, 2, 3]);
    expect(find({ s: { $exists: false } }, documents)).toEqual([4]);
  });
});

describe('sort, skip and limit', () => {
  const documents: JsonDocument[] = [
    { _id: 1, v: 3, g: 'b' }, { _id: 2, v: 1, g: 'a' }, { _id: 3, g: 'a' }, { _id: 4, v: 'x', g: 'b' }, { _id: 5, v: 2, g: 'a' },
  ];

  it('sorts missing < numbers < strings, ascending and descending, ties in input order', () => {
    expect(runQuery(parseQuery({ sort: { v: 1 } }), documents).map((d) => d['_id'])).toEqual([3, 2, 5, 1, 4]);
    expect(runQuery(parseQuery({ sort: { v: -1 } }), documents).map((d) => d['_id'])).toEqual([4, 1, 5, 2, 3]);
    expect(runQuery(parseQuery({ sort: { g: 1 } }), documents).map((d) => d['_id'])).toEqual([2, 3, 5, 1, 4]);
    expect(runQuery(parseQuery({ sort: { g: -1, v: 1 } }), documents).map((d) => d['_id'])).toEqual([1, 4, 3, 2, 5]);
  });

  it('skips then limits, after sorting', () => {
    expect(runQuery(parseQuery({ sort: { v: 1 }, skip: 1, limit: 2 }), documents).map((d) => d['_id'])).toEqual([2, 5]);
    expect(runQuery(parseQuery({ skip: '4', limit: '10' }), documents).map((d) => d['_id'])).toEqual([5]);
    expect(runQuery(parseQuery({ limit: 0 }), documents)).toEqual([]);
  });
});

describe('malformed queries say what is wrong', () => {
  it.each([
    [[], 'the filter must be a JSON object, got an array ([])'],
    [null, 'the filter must be a JSON object, got null'],
    ['value', 'the filter must be a JSON object, got string "value"'],
    [{ value: { $regex: 'a' } }, "unknown operator '$regex' on 'value': supported are $gt, $gte, $lt, $lte, $ne, $in, $exists"],
    [{ value: { $in: 25 } }, "$in on 'value' needs an array, got number 25"],
    [{ value: { $exists: 1 } }, "$exists on 'value' needs true or false, got number 1"],
    [{ value: { $gte: [25] } }, "$gte on 'value' needs a number or a string, got an array ([25])"],
    [{ $or: [] }, "unknown top-level operator '$or': only field conditions are supported (no $and/$or)"],
    [{ value: { $gt: 1, unit: 'C' } }, "condition on 'value' mixes operators and plain fields ($gt, unit): use either {\"$op\": value} or a plain value"],
    [{ 'a..b': 1 }, "field path 'a..b' has an empty part: write paths like 'a.b.c'"],
  ])('filter %j', (filter, message) => {
    expect(errorOf(() => compileFilter(filter)).message).toBe(message);
  });

  it('bad sort, skip and limit', () => {
    expect(errorOf(() => parseQuery({ sort: { v: 2 } })).message).toBe("sort direction of 'v' must be 1 or -1, got number 2");
    expect(errorOf(() => parseQuery({ sort: 'v' })).message).toBe('sort must be a JSON object like {"field": 1} or {"field": -1}, got string "v"');
    expect(errorOf(() => parseQuery({ skip: -1 })).message).toBe('skip must be a non-negative integer, got number -1');
    expect(errorOf(() => parseQuery({ limit: 'ten' })).message).toBe('limit must be a non-negative integer, got string "ten"');
    expect(errorOf(() => parseQuery({ limit: 1.5 })).code).toBe('EQUERY');
  });
});
