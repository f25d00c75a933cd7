/**
 * Property tests for the AMQP 0-9-1 codec (src/protocols/amqp/codec): round
 * trips of every method, field tables, properties and frames; FrameReader fed
 * any split of a valid stream, down to one byte at a time; random and mutated
 * bytes that may only ever produce AmqpCodecError; truncated frames that must
 * give NEED_MORE; and byte-for-byte agreement with amqplib's independent
 * encoder, which round trips alone cannot provide.
 *
 * Replay: the seed is printed; rerun with CAIRN_TEST_SEED=<seed> to reproduce
 * a failure (fast-check also reports its path).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { announceSeed } from '../support/kit.js';
import { describe, expect, it } from 'vitest';
import {
  AmqpCodecError,
  FRAME_TYPE,
  FrameReader,
  METHOD_DEFINITIONS,
  NEED_MORE,
  decodeContentHeader,
  decodeFieldTable,
  decodeFrame,
  decodeMethod,
  decodeProperties,
  deliveryModeOf,
  encodeContentHeader,
  encodeFieldTable,
  encodeFrame,
  encodeMessage,
  encodeMethod,
  encodeMethodFrame,
  encodeProperties,
  validateProperties,
  type AmqpMethod,
  type AmqpMethodInput,
  type BasicProperties,
  type ContentMethodInput,
  type FieldTable,
  type FieldValue,
  type Frame,
  type FrameType,
  type MethodDefinition,
  type MethodFieldType,
} from '../../src/protocols/amqp/codec/index.js';

fc.configureGlobal({ seed: announceSeed('amqp-codec properties') });

const FRAME_MAX = 4096;

// ---------------------------------------------------------------- arbitraries

/** Up to 40 code points of up to 4 UTF-8 bytes: always within a short string's 255 bytes. */
const shortString = fc.string({ unit: 'binary', maxLength: 40 });
const bytes = (maxLength: number): fc.Arbitrary<Buffer> =>
  fc.uint8Array({ maxLength }).map((array) => Buffer.from(array));
/** 0xff never occurs in UTF-8, so these stay Buffers after a round trip. */
const invalidUtf8 = bytes(8).map((tail) => Buffer.concat([Buffer.from([0xff]), tail]));

const leafFieldValue: fc.Arbitrary<FieldValue> = fc.oneof(
  fc.boolean().map((value) => ({ type: 't', value }) as const),
  fc.integer({ min: -0x80, max: 0x7f }).map((value) => ({ type: 'b', value }) as const),
  fc.integer({ min: 0, max: 0xff }).map((value) => ({ type: 'B', value }) as const),
  fc.integer({ min: -0x8000, max: 0x7fff }).map((value) => ({ type: 's', value }) as const),
  fc.integer({ min: 0, max: 0xffff }).map((value) => ({ type: 'u', value }) as const),
  fc.integer().map((value) => ({ type: 'I', value }) as const),
  fc.integer({ min: 0, max: 0xffff_ffff }).map((value) => ({ type: 'i', value }) as const),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((value) => ({ type: 'l', value }) as const),
  fc.float().map((value) => ({ type: 'f', value }) as const),
  fc.double().map((value) => ({ type: 'd', value }) as const),
  fc
    .record({ scale: fc.integer({ min: 0, max: 0xff }), digits: fc.integer({ min: 0, max: 0xffff_ffff }) })
    .map((value) => ({ type: 'D', value }) as const),
  fc.oneof(fc.string({ unit: 'binary', maxLength: 20 }), invalidUtf8).map((value) => ({ type: 'S', value }) as const),
  bytes(16).map((value) => ({ type: 'x', value }) as const),
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((value) => ({ type: 'T', value }) as const),
  fc.constant({ type: 'V', value: null } as const),
);

const tableArbitraries = new Map<number, fc.Arbitrary<FieldTable>>();

/** Tables nested up to `depth` more levels of tables or arrays. */
function fieldTable(depth: number): fc.Arbitrary<FieldTable> {
  const cached = tableArbitraries.get(depth);
  if (cached !== undefined) return cached;
  const table = fc.dictionary(shortString, fieldValue(depth), { maxKeys: 4, noNullPrototype: true });
  tableArbitraries.set(depth, table);
  return table;
}

function fieldValue(depth: number): fc.Arbitrary<FieldValue> {
  if (depth === 0) return leafFieldValue;
  return fc.oneof(
    { weight: 4, arbitrary: leafFieldValue },
    { weight: 1, arbitrary: fieldTable(depth - 1).map((value) => ({ type: 'F', value }) as const) },
    {
      weight: 1,
      arbitrary: fc.array(fieldValue(depth - 1), { maxLength: 3 }).map((value) => ({ type: 'A', value }) as const),
    },
  );
}

const ARGUMENT_ARBITRARIES: Record<MethodFieldType, fc.Arbitrary<unknown>> = {
  octet: fc.integer({ min: 0, max: 0xff }),
  short: fc.integer({ min: 0, max: 0xffff }),
  long: fc.integer({ min: 0, max: 0xffff_ffff }),
  longlong: fc.maxSafeNat(),
  shortstr: shortString,
  longstr: bytes(32),
  bit: fc.boolean(),
  table: fieldTable(2),
};

/** A random instance of one method, ids included, built from its definition. */
function methodOf(definition: MethodDefinition): fc.Arbitrary<AmqpMethod> {
  const argumentArbitraries: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, type] of definition.fields) {
    if (name !== null) argumentArbitraries[name] = ARGUMENT_ARBITRARIES[type];
  }
  return fc.record(argumentArbitraries).map(
    (values) =>
      ({ name: definition.name, classId: definition.classId, methodId: definition.methodId, ...values }) as AmqpMethod,
  );
}

const DEFINITIONS = METHOD_DEFINITIONS as readonly MethodDefinition[];
const anyMethod = fc.constantFrom(...DEFINITIONS).chain(methodOf);
const contentDefinitions = DEFINITIONS.filter((definition) => definition.hasContent === true);

const basicProperties: fc.Arbitrary<BasicProperties> = fc.record(
  {
    contentType: shortString,
    contentEncoding: shortString,
    headers: fieldTable(1),
    deliveryMode: fc.integer({ min: 0, max: 0xff }),
    priority: fc.integer({ min: 0, max: 0xff }),
    correlationId: shortString,
    replyTo: shortString,
    expiration: shortString,
    messageId: shortString,
    timestamp: fc.maxSafeNat(),
    type: shortString,
    userId: shortString,
    appId: shortString,
    clusterId: shortString,
  },
  { requiredKeys: [] },
);

const frame: fc.Arbitrary<Frame> = fc.oneof(
  fc.record({
    type: fc.constantFrom<FrameType>(FRAME_TYPE.METHOD, FRAME_TYPE.HEADER, FRAME_TYPE.BODY),
    channel: fc.integer({ min: 0, max: 0xffff }),
    payload: bytes(300),
  }),
  fc.constant({ type: FRAME_TYPE.HEARTBEAT, channel: 0, payload: Buffer.alloc(0) }),
);

// ------------------------------------------------------------------- helpers

/** Runs `decode`; anything thrown must be the codec's typed error. */
function onlyTypedErrors(decode: () => unknown): void {
  try {
    decode();
  } catch (error: unknown) {
    if (!(error instanceof AmqpCodecError)) throw error;
    expect([501, 502, 540]).toContain(error.replyCode);
  }
}

/** Feeds `chunks` to a FrameReader and collects every frame it yields. */
function readAll(chunks: readonly Buffer[], frameMax = FRAME_MAX): Frame[] {
  const reader = new FrameReader(frameMax);
  const frames: Frame[] = [];
  for (const chunk of chunks) {
    reader.push(chunk);
    for (let next = reader.readFrame(); next !== NEED_MORE; next = reader.readFrame()) frames.push(next);
  }
  expect(reader.bufferedBytes).toBe(0);
  return frames;
}

/** Splits `buffer` at the given (unsorted, possibly repeated) cut points. */
function splitAt(buffer: Buffer, cuts: readonly number[]): Buffer[] {
  const points = [...new Set(cuts.map((cut) => cut % (buffer.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let start = 0;
  for (const point of [...points, buffer.length]) {
    chunks.push(buffer.subarray(start, point));
    start = point;
  }
  return chunks;
}

function plainFrame(decoded: Frame): { type: number; channel: number; payload: Buffer } {
  return { type: decoded.type, channel: decoded.channel, payload: Buffer.from(decoded.payload) };
}

// --------------------------------------------------------------------- tests

describe('field tables (spec 4.2.5.5, RabbitMQ errata types)', () => {
  it('decode(encode(table)) equals the table, nested tables and arrays included', () => {
    fc.assert(
      fc.property(fieldTable(3), (table) => {
        expect(decodeFieldTable(encodeFieldTable(table))).toEqual(table);
      }),
      { numRuns: 500 },
    );
  });

  it('re-encoding decoded bytes reproduces them exactly', () => {
    fc.assert(
      fc.property(fieldTable(3), (table) => {
        const encoded = encodeFieldTable(table);
        expect(encodeFieldTable(decodeFieldTable(encoded))).toEqual(encoded);
      }),
      { numRuns: 300 },
    );
  });
});

describe('methods: decode(encode(m)) = m for every method', () => {
  for (const definition of DEFINITIONS) {
    it(`${definition.name} (${definition.classId}.${definition.methodId})`, () => {
      fc.assert(
        fc.property(methodOf(definition), (method) => {
          const payload = encodeMethod(method);
          expect(decodeMethod(payload)).toEqual(method);
          expect(encodeMethod(decodeMethod(payload))).toEqual(payload);
        }),
        { numRuns: 40 },
      );
    });
  }

  it('a method frame decodes to the same method on the same channel', () => {
    fc.assert(
      fc.property(anyMethod, fc.integer({ min: 0, max: 0xffff }), (method, channel) => {
        const decoded = decodeFrame(encodeMethodFrame(channel, method), 0, 1 << 20);
        if (decoded === NEED_MORE) throw new Error('whole frame expected');
        expect(decoded.frame.type).toBe(FRAME_TYPE.METHOD);
        expect(decoded.frame.channel).toBe(channel);
        expect(decodeMethod(decoded.frame.payload)).toEqual(method);
      }),
      { numRuns: 300 },
    );
  });
});

describe('content headers and properties (spec 4.2.6)', () => {
  it('decodeProperties(encodeProperties(p)) = p', () => {
    fc.assert(
      fc.property(basicProperties, (properties) => {
        expect(decodeProperties(encodeProperties(properties))).toEqual(properties);
      }),
      { numRuns: 400 },
    );
  });

  it('a content header keeps the raw property bytes exactly, and deliveryModeOf reads them', () => {
    fc.assert(
      fc.property(basicProperties, fc.maxSafeNat(), (properties, bodySize) => {
        const raw = encodeProperties(properties);
        const header = decodeContentHeader(encodeContentHeader(60, bodySize, raw));
        expect(header).toEqual({ classId: 60, bodySize, rawProperties: raw });
        expect(deliveryModeOf(header.rawProperties)).toBe(properties.deliveryMode);
      }),
      { numRuns: 400 },
    );
  });
});

describe('frames (spec 4.2.3) and FrameReader', () => {
  it('decodeFrame(encodeFrame(f)) = f and consumes exactly the frame', () => {
    fc.assert(
      fc.property(frame, bytes(10), (original, trailing) => {
        const encoded = encodeFrame(original.type, original.channel, original.payload);
        const decoded = decodeFrame(Buffer.concat([encoded, trailing]), 0, FRAME_MAX);
        if (decoded === NEED_MORE) throw new Error('whole frame expected');
        expect(decoded.bytesConsumed).toBe(encoded.length);
        expect(plainFrame(decoded.frame)).toEqual(plainFrame(original));
      }),
    );
  });

  it('every proper prefix of a frame is NEED_MORE', () => {
    fc.assert(
      fc.property(frame, (original) => {
        const encoded = encodeFrame(original.type, original.channel, original.payload);
        for (let length = 0; length < encoded.length; length++) {
          expect(decodeFrame(encoded.subarray(0, length), 0, FRAME_MAX)).toBe(NEED_MORE);
        }
      }),
      { numRuns: 100 },
    );
  });

  it('a stream split anywhere yields the same frames as decoding it whole', () => {
    fc.assert(
      fc.property(fc.array(frame, { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), (frames, cuts) => {
        const stream = Buffer.concat(frames.map((each) => encodeFrame(each.type, each.channel, each.payload)));
        expect(readAll(splitAt(stream, cuts)).map(plainFrame)).toEqual(frames.map(plainFrame));
      }),
    );
  });

  it('a stream fed one byte at a time yields the same frames', () => {
    fc.assert(
      fc.property(fc.array(frame, { maxLength: 5 }), (frames) => {
        const stream = Buffer.concat(frames.map((each) => encodeFrame(each.type, each.channel, each.payload)));
        const oneByteChunks = [...stream].map((octet) => Buffer.from([octet]));
        expect(readAll(oneByteChunks).map(plainFrame)).toEqual(frames.map(plainFrame));
      }),
      { numRuns: 50 },
    );
  });

  it('encodeMessage gives method, header and body frames of at most frameMax bytes', () => {
    const contentMethod = fc.constantFrom(...contentDefinitions).chain(methodOf);
    fc.assert(
      fc.property(
        contentMethod,
        basicProperties,
        bytes(20_000),
        fc.integer({ min: 4096, max: 9000 }),
        fc.integer({ min: 1, max: 0xffff }),
        (method, properties, body, frameMax, channel) => {
          const rawProperties = encodeProperties(properties);
          const encoded = encodeMessage(
            { channel, method: method as ContentMethodInput, rawProperties, body },
            frameMax,
          );
          const frames = readAll(splitAt(encoded, [frameMax / 3, frameMax + 1]), frameMax);
          const [methodFrame, headerFrame, ...bodyFrames] = frames;
          expect(frames.every((each) => each.channel === channel && each.payload.length <= frameMax - 8)).toBe(true);
          expect(decodeMethod(methodFrame!.payload)).toEqual(method);
          expect(decodeContentHeader(headerFrame!.payload)).toEqual({
            classId: 60,
            bodySize: body.length,
            rawProperties,
          });
          expect(bodyFrames.length).toBe(Math.ceil(body.length / (frameMax - 8)));
          expect(bodyFrames.every((each) => each.type === FRAME_TYPE.BODY)).toBe(true);
          expect(Buffer.concat(bodyFrames.map((each) => each.payload))).toEqual(body);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('malformed input: only typed errors, never a crash or a hang', () => {
  it('decodeFrame on random bytes', () => {
    fc.assert(fc.property(bytes(64), (input) => onlyTypedErrors(() => decodeFrame(input, 0, FRAME_MAX))), {
      numRuns: 2000,
    });
  });

  it('FrameReader on random chunks reads until NEED_MORE or a typed error', () => {
    fc.assert(
      fc.property(fc.array(bytes(40), { maxLength: 6 }), (chunks) => {
        const reader = new FrameReader(FRAME_MAX);
        onlyTypedErrors(() => {
          for (const chunk of chunks) {
            reader.push(chunk);
            while (reader.readFrame() !== NEED_MORE);
          }
        });
      }),
      { numRuns: 1000 },
    );
  });

  it('decodeMethod on random arguments after known and unknown ids', () => {
    const knownIds = fc.constantFrom(...DEFINITIONS).map((definition) => [definition.classId, definition.methodId]);
    const anyIds = fc.tuple(fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 0, max: 0xffff }));
    fc.assert(
      fc.property(fc.oneof(knownIds, anyIds), bytes(48), ([classId, methodId], rest) => {
        const payload = Buffer.alloc(4 + rest.length);
        payload.writeUInt16BE(classId!, 0);
        payload.writeUInt16BE(methodId!, 2);
        rest.copy(payload, 4);
        onlyTypedErrors(() => decodeMethod(payload));
      }),
      { numRuns: 3000 },
    );
  });

  it('decodeMethod on valid payloads with one byte changed or the end cut off', () => {
    fc.assert(
      fc.property(anyMethod, fc.nat(), fc.integer({ min: 0, max: 0xff }), fc.boolean(), (method, at, octet, cut) => {
        const payload = Buffer.from(encodeMethod(method));
        const index = at % payload.length;
        if (cut) {
          onlyTypedErrors(() => decodeMethod(payload.subarray(0, index)));
        } else {
          payload[index] = octet;
          onlyTypedErrors(() => decodeMethod(payload));
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('decodeFieldTable on random bodies behind a matching length', () => {
    fc.assert(
      fc.property(bytes(64), (body) => {
        const input = Buffer.alloc(4 + body.length);
        input.writeUInt32BE(body.length, 0);
        body.copy(input, 4);
        onlyTypedErrors(() => decodeFieldTable(input));
      }),
      { numRuns: 2000 },
    );
  });

  it('decodeFieldTable on valid tables with one byte changed', () => {
    fc.assert(
      fc.property(fieldTable(3), fc.nat(), fc.integer({ min: 0, max: 0xff }), (table, at, octet) => {
        const input = Buffer.from(encodeFieldTable(table));
        input[at % input.length] = octet;
        onlyTypedErrors(() => decodeFieldTable(input));
      }),
      { numRuns: 1000 },
    );
  });

  it('content headers and raw properties: random and mutated bytes', () => {
    const mutatedProperties = fc
      .tuple(basicProperties, fc.nat(), fc.integer({ min: 0, max: 0xff }))
      .map(([properties, at, octet]) => {
        const raw = Buffer.from(encodeProperties(properties));
        raw[at % raw.length] = octet;
        return raw;
      });
    fc.assert(
      fc.property(fc.oneof(bytes(40), mutatedProperties), (raw) => {
        onlyTypedErrors(() => decodeContentHeader(Buffer.concat([Buffer.alloc(12), raw])));
        onlyTypedErrors(() => decodeProperties(raw));
        onlyTypedErrors(() => deliveryModeOf(raw));
        let decoded: BasicProperties | undefined;
        try {
          decoded = decodeProperties(raw);
        } catch (error: unknown) {
          if (!(error instanceof AmqpCodecError)) throw error;
        }
        if (decoded !== undefined) {
          // Whatever decodes fully is structurally valid and agrees with the cheap reader.
          validateProperties(raw);
          expect(deliveryModeOf(raw)).toBe(decoded.deliveryMode);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

// ------------------------------------------------------- amqplib cross-check

interface AmqplibDefinitions {
  encodeMethod(id: number, channel: number, fields: Record<string, unknown>): Buffer;
  encodeProperties(classId: number, channel: number, size: number, fields: Record<string, unknown>): Buffer;
  info(id: number): { args: { name: string }[] };
}
interface AmqplibCodec {
  encodeTable(buffer: Buffer, value: unknown, offset: number): number;
}
// amqplib's package exports hide lib/, so its files are loaded by path.
const require = createRequire(import.meta.url);
const amqplibRoot = dirname(require.resolve('amqplib'));
const amqplibDefinitions = require(join(amqplibRoot, 'lib/defs.js')) as AmqplibDefinitions;
const amqplibCodec = require(join(amqplibRoot, 'lib/codec.js')) as AmqplibCodec;

const AMQPLIB_TYPE_NAMES: Partial<Record<FieldValue['type'], string>> = {
  b: 'int8', B: 'uint8', s: 'int16', u: 'uint16', I: 'int32', i: 'uint32',
  l: 'int64', f: 'float', d: 'double', T: 'timestamp',
};

/** Our tagged value in amqplib's notation, where {'!': type, value} pins the type. */
function toAmqplibValue(field: FieldValue): unknown {
  switch (field.type) {
    case 't': case 'S': case 'x': case 'V': return field.value;
    case 'D': return { '!': 'decimal', value: { places: field.value.scale, digits: field.value.digits } };
    case 'F': return toAmqplibTable(field.value);
    case 'A': return field.value.map(toAmqplibValue);
    default: return { '!': AMQPLIB_TYPE_NAMES[field.type], value: field.value };
  }
}

function toAmqplibTable(table: FieldTable): Record<string, unknown> {
  const converted: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(table)) converted[name] = toAmqplibValue(value);
  return converted;
}

/** amqplib cannot send binary 'S' values or '__proto__' keys; keep to what it can. */
function amqplibCanEncode(table: FieldTable): boolean {
  return Object.entries(table).every(([name, value]) => name !== '__proto__' && amqplibCanEncodeValue(value));
}

function amqplibCanEncodeValue(value: FieldValue): boolean {
  if (value.type === 'S') return typeof value.value === 'string';
  if (value.type === 'F') return amqplibCanEncode(value.value);
  if (value.type === 'A') return value.value.every(amqplibCanEncodeValue);
  return true;
}

describe('agreement with amqplib, an independent encoder', () => {
  it('field tables encode to the same bytes', () => {
    fc.assert(
      fc.property(fieldTable(3).filter(amqplibCanEncode), (table) => {
        const scratch = Buffer.alloc(1 << 16);
        const length = amqplibCodec.encodeTable(scratch, toAmqplibTable(table), 0);
        expect(encodeFieldTable(table)).toEqual(scratch.subarray(0, length));
      }),
      { numRuns: 300 },
    );
  });

  it('every method frame encodes to the same bytes', () => {
    const encodable = anyMethod.filter((method) =>
      Object.values(method).every((value) => !isFieldTable(value) || amqplibCanEncode(value)),
    );
    fc.assert(
      fc.property(encodable, fc.integer({ min: 0, max: 0xffff }), (method, channel) => {
        expect(encodeMethodFrame(channel, method)).toEqual(encodeWithAmqplib(channel, method));
      }),
      { numRuns: 1000 },
    );
  });

  it('content header frames encode to the same bytes', () => {
    const encodable = basicProperties.filter((properties) => amqplibCanEncode(properties.headers ?? {}));
    fc.assert(
      fc.property(encodable, fc.integer({ min: 0, max: 2 ** 40 }), fc.nat(0xffff), (properties, bodySize, channel) => {
        const ours = encodeFrame(FRAME_TYPE.HEADER, channel, encodeContentHeader(60, bodySize, encodeProperties(properties)));
        const fields: Record<string, unknown> = { ...properties };
        if (properties.headers !== undefined) fields['headers'] = toAmqplibTable(properties.headers);
        expect(ours).toEqual(amqplibDefinitions.encodeProperties(60, channel, bodySize, fields));
      }),
      { numRuns: 500 },
    );
  });
});

function isFieldTable(value: unknown): value is FieldTable {
  return typeof value === 'object' && value !== null && !Buffer.isBuffer(value);
}

/** amqplib names arguments its own way; they line up with ours by position. */
function encodeWithAmqplib(channel: number, method: AmqpMethodInput & AmqpMethod): Buffer {
  const definition = DEFINITIONS.find((each) => each.name === method.name)!;
  const id = definition.classId * 0x1_0000 + definition.methodId;
  const amqplibArguments = amqplibDefinitions.info(id).args;
  const fields: Record<string, unknown> = {};
  definition.fields.forEach(([name, type], index) => {
    const value = name === null ? RESERVED_FOR_AMQPLIB[type] : (method as Record<string, unknown>)[name];
    fields[amqplibArguments[index]!.name] = type === 'table' ? toAmqplibTable(value as FieldTable) : value;
  });
  return amqplibDefinitions.encodeMethod(id, channel, fields);
}

const RESERVED_FOR_AMQPLIB: Record<MethodFieldType, unknown> = {
  octet: 0, short: 0, long: 0, longlong: 0, shortstr: '', longstr: Buffer.alloc(0), bit: false, table: {},
};
