/**
 * The fast body encoder (src/log/body-encoder.ts) against @msgpack/msgpack:
 * for any value, it writes exactly the library's bytes or steps aside
 * (`unsupported`), never past its limit; on the shapes Cairn's bodies are
 * made of it does not step aside. And the append path's frames
 * (appendFrame, either encoder) are the frames encodeFrame builds with the
 * library alone.
 */
import { encode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { announceSeed, testSeed } from '../support/kit.js';
import { encodeBodyInto, unsupported } from '../../src/log/body-encoder.js';
import { appendFrame, encodeFrame, type AppendRecord, type FrameSink } from '../../src/log/record.js';

/** What Cairn's bodies are made of (any well-formed string included): the encoder must take all of it. */
const cairnValue = fc.letrec((tie) => ({
  any: fc.oneof(
    { depthSize: 'small' },
    fc.string({ unit: fc.integer({ min: 0, max: 0x7f }).map((code) => String.fromCharCode(code)), maxLength: 300 }),
    fc.constantFrom('bench-session', 'bench-q', 'a', 'x'.repeat(70), 'y'.repeat(300)),
    fc.string({ unit: 'binary', maxLength: 300 }),
    fc.constantFrom('é', 'capteur/température', '\u{1F600}'.repeat(80), 'ж'.repeat(128), '\u07ff\u0800\uffff\u{10000}\u{10ffff}'),
    fc.integer(),
    fc.integer({ min: -0x80, max: 0x100 }),
    fc.maxSafeInteger(),
    fc.integer({ min: Number.MIN_SAFE_INTEGER, max: -0x80000001 }),
    fc.double(),
    fc.constantFrom(-0, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, 0x100000000, -0x80000000, 0xffff),
    fc.boolean(),
    fc.constantFrom(null, undefined),
    fc.uint8Array({ maxLength: 300 }),
    fc.constant(new Uint8Array(0x10000).fill(7)),
    fc.array(tie('any'), { maxLength: 5 }),
    fc.array(fc.constant(1), { minLength: 16, maxLength: 20 }),
    fc.dictionary(fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)), maxLength: 8 }), tie('any'), { maxKeys: 5 }),
    fc.dictionary(fc.string({ minLength: 2, maxLength: 4 }).map((key) => `k${key.length}${key.charCodeAt(0) & 0x3f}`), fc.constant(0), { minKeys: 16, maxKeys: 20 }),
  ),
})).any;

/** Anything else the library encodes, or refuses: the encoder must agree or step aside. */
const otherValue = fc.letrec((tie) => ({
  any: fc.oneof(
    { depthSize: 'small' },
    cairnValue,
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 10 }),
    fc.string({ unit: fc.oneof(fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)), fc.constantFrom('\ud800', '\udfff', 'a')), maxLength: 300 }),
    fc.date({ noInvalidDate: true }),
    fc.float32Array({ maxLength: 4 }),
    fc.bigInt(),
    fc.constant(new (class Point { x = 1; })()),
    fc.constant(new Map([['a', 1]])),
    fc.array(tie('any'), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('any'), { maxKeys: 4 }),
  ),
})).any;

/** Encodes into the middle of a bigger buffer, as the append path does behind the frame header. */
function fastEncode(value: unknown, room = 1 << 20): { end: number; bytes: Uint8Array } {
  const target = new Uint8Array(29 + room + 16).fill(0xc1);
  const end = encodeBodyInto(target, new DataView(target.buffer), 29, 29 + room, value);
  expect(target.subarray(29 + room)).toStrictEqual(new Uint8Array(16).fill(0xc1));
  return { end, bytes: end === unsupported ? new Uint8Array(0) : target.subarray(29, end) };
}

function libraryEncode(value: unknown): Uint8Array | undefined {
  try {
    return encode(value);
  } catch {
    return undefined;
  }
}

/** A batch as the group commit keeps one, starting small so that appendFrame must grow it. */
class GrowingSink implements FrameSink {
  buffer = new Uint8Array(16);
  length = 0;

  reserve(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    const bigger = new Uint8Array(2 * (this.length + bytes));
    bigger.set(this.buffer.subarray(0, this.length));
    this.buffer = bigger;
  }
}

describe('body encoder', () => {
  it("writes @msgpack/msgpack's bytes for every value of Cairn's shapes", () => {
    fc.assert(fc.property(cairnValue, (value) => {
      const { end, bytes } = fastEncode(value);
      expect(end).not.toBe(unsupported);
      expect(Buffer.from(bytes).equals(encode(value))).toBe(true);
    }), { seed: announceSeed('body-encoder cairn shapes'), numRuns: 3000 });
  });

  it('writes the library bytes on either side of every size boundary of the formats', () => {
    const integers = [0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0xffffffff, 0x100000000, -0x20, -0x21, -0x80, -0x81, -0x8000, -0x8001, -0x80000000, -0x80000001];
    const lengths = [15, 16, 31, 32, 255, 256, 65535, 65536];
    const values: unknown[] = [
      ...integers.flatMap((n) => [n, n + 0.5]),
      ...lengths.flatMap((n) => ['s'.repeat(n), new Uint8Array(n).fill(1), new Array<number>(n).fill(0), Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))]),
    ];
    for (const value of values) {
      const { end, bytes } = fastEncode(value);
      expect(end).not.toBe(unsupported);
      expect(Buffer.from(bytes).equals(encode(value))).toBe(true);
    }
  });

  it('writes the library bytes or steps aside for anything else, and steps aside where the library refuses', () => {
    let fast = 0;
    fc.assert(fc.property(otherValue, (value) => {
      const { end, bytes } = fastEncode(value);
      const expected = libraryEncode(value);
      if (end === unsupported) return;
      fast += 1;
      expect(expected).toBeDefined();
      expect(Buffer.from(bytes).equals(expected!)).toBe(true);
    }), { seed: announceSeed('body-encoder other values'), numRuns: 3000 });
    expect(fast).toBeGreaterThan(300);
    // Lone surrogates: the library writes them one way below its TextEncoder threshold and another above it.
    for (const lone of ['\ud800', 'a\udc00', '\ud83d'.repeat(300), 'x\ud800y']) expect(fastEncode(lone).end).toBe(unsupported);
    expect(fastEncode(new Date(0)).end).toBe(unsupported);
  });

  it('steps aside instead of writing past its limit, at every limit short of the body', () => {
    const body = { t: 'bench/x', p: new Uint8Array(100).fill(42), qos: 1, s: [['bench-session', 7, 1]], n: -70000, f: 0.5, big: 2 ** 40 };
    const length = encode(body).length;
    for (let room = 0; room < length; room++) expect(fastEncode(body, room).end).toBe(unsupported);
    expect(fastEncode(body, length).end).toBe(29 + length);
  });

  it('appendFrame writes the frames encodeFrame builds with the library alone, fast or not, growing its sink', () => {
    const seed = announceSeed('body-encoder appendFrame');
    const sink = new GrowingSink();
    const expected: Buffer[] = [];
    const body = fc.oneof(otherValue, fc.constant(new Uint8Array(70_000).fill(3)));
    fc.assert(fc.property(body, fc.integer({ min: 1, max: 255 }), fc.double({ noNaN: true, noDefaultInfinity: true }), (value, kind, timestamp) => {
      const record: AppendRecord = { kind, timestamp, body: value };
      const lsn = expected.length + 1;
      let frame: Buffer;
      try {
        frame = encodeFrame(lsn, record);
      } catch (error) {
        expect(() => appendFrame(sink, lsn, record)).toThrow((error as Error).constructor as new () => Error);
        return;
      }
      const length = appendFrame(sink, lsn, record);
      expect(length).toBe(frame.length);
      expected.push(frame);
      sink.length += length;
    }), { seed, numRuns: 1000 });
    expect(Buffer.from(sink.buffer.subarray(0, sink.length)).equals(Buffer.concat(expected))).toBe(true);
  });
});
