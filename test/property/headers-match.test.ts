/**
 * Properties of the headers exchange's matcher (src/core/headers-match.ts)
 * against a transcription of RabbitMQ's own algorithm
 * (rabbit_exchange_type_headers:headers_match/5): both tables sorted by name,
 * walked together with an "all so far" and an "any so far" flag, stopping
 * early as RabbitMQ does. The two are written differently on purpose (a merge
 * walk there, a lookup per condition here). Values come from a small pool of
 * names and values of several field types, so that equal values under
 * different tags (int8 1, long 1, double 1) and equal-looking values of
 * different kinds (the string '1') meet often.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fieldValuesEqual, headersMatch, xMatchOf, type XMatchMode } from '../../src/core/headers-match.js';
import type { FieldTable, FieldValue } from '../../src/protocols/amqp/codec/index.js';
import { announceSeed, testSeed } from '../support/kit.js';

const seed = announceSeed('test/property/headers-match');
const runs = { seed, numRuns: 3_000 } as const;

const nameArbitrary = fc.constantFrom('format', 'type', 'n', 'x-tenant', 'x-retry', 'colour');
const valueArbitrary: fc.Arbitrary<FieldValue> = fc.oneof(
  fc.constantFrom('pdf', 'log', '1', 'acme').map((value): FieldValue => ({ type: 'S', value })),
  fc.integer({ min: 0, max: 2 }).map((value): FieldValue => ({ type: 'b', value })),
  fc.integer({ min: 0, max: 2 }).map((value): FieldValue => ({ type: 'I', value })),
  fc.integer({ min: 0, max: 2 }).map((value): FieldValue => ({ type: 'l', value: BigInt(value) })),
  fc.integer({ min: 0, max: 2 }).map((value): FieldValue => ({ type: 'd', value })),
  fc.boolean().map((value): FieldValue => ({ type: 't', value })),
);
const tableArbitrary = fc.dictionary(nameArbitrary, valueArbitrary, { maxKeys: 5 });
const modeArbitrary = fc.constantFrom<XMatchMode | undefined>('all', 'any', 'all-with-x', 'any-with-x', undefined);
/** Binding arguments: some entries are presence tests (void). */
const bindingArbitrary = fc.tuple(fc.dictionary(nameArbitrary, fc.option(valueArbitrary, { nil: undefined, freq: 4 }), { maxKeys: 5 }), modeArbitrary)
  .map(([entries, mode]) => {
    const table: Record<string, FieldValue> = {};
    for (const [name, value] of Object.entries(entries)) table[name] = value ?? { type: 'V', value: null };
    if (mode !== undefined) table['x-match'] = { type: 'S', value: mode };
    return table as FieldTable;
  });

/** RabbitMQ's merge walk over two name-sorted lists. */
function rabbitHeadersMatch(args: FieldTable, data: FieldTable | undefined): boolean {
  const mode = xMatchOf(args);
  const kind = mode.startsWith('all') ? 'all' : 'any';
  const withX = mode.endsWith('-with-x');
  const pattern = Object.entries(args).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const values = Object.entries(data ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  let allMatch = true;
  let anyMatch = false;
  let p = 0;
  let d = 0;
  for (;;) {
    if (kind === 'all' && !allMatch) return false;
    if (kind === 'any' && anyMatch) return true;
    if (p === pattern.length) return kind === 'all' ? allMatch : anyMatch;
    const [patternName, patternValue] = pattern[p]!;
    if (patternName === 'x-match' || (!withX && patternName.startsWith('x-'))) { p++; continue; }
    if (d === values.length) { allMatch = false; p = pattern.length; continue; }
    const [dataName, dataValue] = values[d]!;
    if (patternName > dataName) { d++; continue; }
    if (patternName < dataName) { allMatch = false; p++; continue; }
    if (patternValue.type === 'V' || fieldValuesEqual(patternValue, dataValue)) anyMatch = true;
    else allMatch = false;
    p++;
    d++;
  }
}

describe(`headers matcher (seed ${testSeed})`, () => {
  it('agrees with RabbitMQ\'s merge walk for any binding and any message headers', () => {
    fc.assert(fc.property(bindingArbitrary, fc.option(tableArbitrary, { nil: undefined }), (args, headers) => {
      expect(headersMatch(args, headers)).toBe(rabbitHeadersMatch(args, headers));
    }), runs);
  });

  it('a message carrying exactly the binding\'s conditions matches it in every mode but any over no conditions', () => {
    fc.assert(fc.property(bindingArbitrary, (args) => {
      const headers: Record<string, FieldValue> = {};
      for (const [name, value] of Object.entries(args)) if (name !== 'x-match') headers[name] = value.type === 'V' ? { type: 'S', value: 'present' } : value;
      const mode = xMatchOf(args);
      const conditions = Object.keys(headers).filter((name) => mode.endsWith('-with-x') || !name.startsWith('x-'));
      expect(headersMatch(args, headers)).toBe(mode.startsWith('all') || conditions.length > 0);
    }), runs);
  });

  it('equal numbers under different field types are equal, a string never equals a number', () => {
    fc.assert(fc.property(fc.integer({ min: -100, max: 100 }), (n) => {
      const tags: FieldValue[] = [{ type: 'b', value: Math.max(-128, Math.min(127, n)) }, { type: 'I', value: n }, { type: 'l', value: BigInt(n) }, { type: 'd', value: n }];
      const comparable = tags.filter((tag) => Number(tag.value) === n);
      for (const a of comparable) for (const b of comparable) expect(fieldValuesEqual(a, b)).toBe(true);
      expect(fieldValuesEqual({ type: 'S', value: String(n) }, { type: 'I', value: n })).toBe(false);
    }), runs);
  });
});
