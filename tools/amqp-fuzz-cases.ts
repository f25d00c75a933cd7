/**
 * What the AMQP fuzzer sends: fast-check arbitraries of byte streams for one
 * connection, each with the reaction the broker owes it. Shared by the fuzz
 * test (test/property/amqp-fuzz.test.ts, bounded in time) and the fuzz
 * benchmark (tools/bench-fuzz-amqp.ts, a million frames).
 *
 * A case starts from a context the client reaches first, then sends its bytes
 * in one write:
 *   raw      nothing: the bytes replace the protocol header
 *   header   'AMQP' 0 0 9 1 sent, connection.start received
 *   open     the whole handshake done (frame-max 4096, channel-max 2047)
 *   channel  and channel 1 opened
 *
 * Two families:
 * - A known fault (bad frame-end, a size beyond frame-max, an unknown frame
 *   type, a heartbeat on a channel or with a payload, an unknown class/method,
 *   content frames on channel 0 or with no basic.publish before them, a body
 *   longer than declared, an invalid UTF-8 short string, field tables nested
 *   too deep or with a length past their frame), after harmless frames. The
 *   broker owes connection.close with the reply code the spec (or Cairn's
 *   documented choice, codec/errors.ts) names, then the end of the socket.
 * - A well-formed frame cut short, then the client's half-close.
 * - Sessions (amqp-fuzz-sessions.ts): well-formed client methods over a few
 *   shared names on channels 1–3, so that deliveries and settlements happen.
 * - Noise: valid methods of every class with random arguments, content
 *   frames, heartbeats and the known faults, on channels 0–3, optionally
 *   mutated byte by byte (changed, cut, inserted, removed). Anything may
 *   happen but a crash; the client half-closes and the socket must end.
 */
import fc from 'fast-check';
import {
  CLASS_ID, encodeContentHeader, encodeFrame, encodeMethodFrame, encodeProperties, FIELD_NESTING_DEPTH_MAX, FRAME_END,
  FRAME_TYPE, METHOD_DEFINITIONS, METHOD_ID, methodDefinitionById, PROTOCOL_HEADER, REPLY_CODE,
  type AmqpMethodInput, type MethodDefinition, type MethodFieldType,
} from '../src/protocols/amqp/codec/index.js';
import { basicProperties, bytesOf, emptyTable, fieldTable, publicationFrames, rawFrame, shortString, u16, u32 } from './amqp-fuzz-frames.js';
import { sessionBytes } from './amqp-fuzz-sessions.js';

export type FuzzContext = 'raw' | 'header' | 'open' | 'channel';

/** The broker's due reaction to a case. */
export type FuzzExpectation =
  /** connection.close with this reply code, then the socket ends once close-ok is sent. */
  | { readonly kind: 'connection-close'; readonly replyCode: number }
  /** The socket ends (a rejected protocol header is answered with the supported one first). */
  | { readonly kind: 'hang-up' }
  /** Anything but a crash; the client half-closes and the socket must end. */
  | { readonly kind: 'any' };

export interface FuzzCase {
  readonly context: FuzzContext;
  /** What the case is, for a failure report. */
  readonly label: string;
  readonly bytes: Buffer;
  /** Frames in `bytes` as generated (before mutation): what the benchmark counts. */
  readonly frameCount: number;
  readonly expect: FuzzExpectation;
}

/** The frame-max the fuzz client agrees in tune-ok (the spec minimum): oversized frames stay cheap to send. */
export const fuzzFrameMaxBytes = 4096;

// ───────────────────────────── methods carrying a bad value ─────────────────────────────

/** connection.start-ok with raw argument bytes: the channel-0 method every context may carry a bad value in. */
function startOkPayload(clientProperties: Buffer, mechanism: Buffer): Buffer {
  return Buffer.concat([u16(CLASS_ID.CONNECTION), u16(METHOD_ID.CONNECTION.START_OK), clientProperties, shortString(mechanism), u32(0), shortString(Buffer.from('en_US'))]);
}

/** queue.declare with raw argument bytes: the channel method that carries a queue name and a table. */
function queueDeclarePayload(queue: Buffer, argumentsTable: Buffer): Buffer {
  return Buffer.concat([u16(CLASS_ID.QUEUE), u16(METHOD_ID.QUEUE.DECLARE), u16(0), shortString(queue), Buffer.from([0]), argumentsTable]);
}

/** A field table holding one table, holding one table… `depth` levels deep. */
function nestedTable(depth: number): Buffer {
  let table = emptyTable;
  for (let level = 0; level < depth; level++) {
    const entry = Buffer.concat([shortString(Buffer.from('n')), Buffer.from('F'), table]);
    table = Buffer.concat([u32(entry.length), entry]);
  }
  return table;
}

const contentHeader = (bodySize: number, classId: number = CLASS_ID.BASIC): Buffer => encodeContentHeader(classId, bodySize, encodeProperties({}));
const publishFrame = (channel: number, routingKey: string): Buffer => encodeMethodFrame(channel, { name: 'basic.publish', exchange: '', routingKey, mandatory: false, immediate: false });

// ───────────────────────────── valid methods with random arguments ─────────────────────────────

function argumentOf(type: MethodFieldType): fc.Arbitrary<unknown> {
  switch (type) {
    case 'octet': return fc.integer({ min: 0, max: 0xff });
    case 'short': return fc.oneof(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 0xffff }));
    case 'long': return fc.oneof(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 0xffff_ffff }));
    case 'longlong': return fc.oneof(fc.integer({ min: 0, max: 8 }), fc.maxSafeNat());
    case 'shortstr': return fc.oneof(fc.constantFrom('', 'q', 'amq.direct', 'amq.topic', 'PLAIN'), fc.string({ maxLength: 24 }));
    case 'longstr': return bytesOf(24);
    case 'bit': return fc.boolean();
    case 'table': return fieldTable;
  }
}

/** A method with well-formed arguments drawn by `argument`. */
function methodOf(definition: MethodDefinition): fc.Arbitrary<AmqpMethodInput> {
  const named = definition.fields.filter(([name]) => name !== null) as ReadonlyArray<readonly [string, MethodFieldType]>;
  return fc.tuple(...named.map(([, type]) => argumentOf(type))).map((values) => {
    const method: Record<string, unknown> = { name: definition.name };
    named.forEach(([name], index) => {
      method[name] = values[index];
    });
    return method as unknown as AmqpMethodInput;
  });
}

const anyMethod: fc.Arbitrary<AmqpMethodInput> = fc.constantFrom(...(METHOD_DEFINITIONS as readonly MethodDefinition[])).chain((definition) => methodOf(definition));

// ───────────────────────────── known faults ─────────────────────────────

/** One fault: its frames and the reply code it is owed in each context after the header (undefined: not generated there). */
interface Fault {
  readonly label: string;
  readonly bytes: Buffer;
  readonly replyCode: Partial<Record<Exclude<FuzzContext, 'raw'>, number>>;
}

const everywhere = (code: number): Fault['replyCode'] => ({ header: code, open: code, channel: code });
/** A frame on channel 1: before connection.open it is 503; on an unopened channel, what channel.open checking says. */
const onChannelOne = (openCode: number, channelCode: number): Fault['replyCode'] => ({ header: REPLY_CODE.COMMAND_INVALID, open: openCode, channel: channelCode });

const validFrame: fc.Arbitrary<Buffer> = fc.tuple(fc.integer({ min: 0, max: 3 }), anyMethod).map(([channel, method]) => encodeMethodFrame(channel, method));

const badFrameEnd: fc.Arbitrary<Fault> = fc.tuple(validFrame, fc.integer({ min: 0, max: 0xff }).filter((octet) => octet !== FRAME_END)).map(([frame, octet]) => {
  const bad = Buffer.from(frame);
  bad[bad.length - 1] = octet;
  return { label: `frame-end 0x${octet.toString(16)}`, bytes: bad, replyCode: everywhere(REPLY_CODE.FRAME_ERROR) };
});

const oversizedFrame: fc.Arbitrary<Fault> = fc.tuple(
  fc.constantFrom(FRAME_TYPE.METHOD, FRAME_TYPE.HEADER, FRAME_TYPE.BODY),
  fc.integer({ min: 0, max: 3 }),
  fc.oneof(fc.integer({ min: fuzzFrameMaxBytes - 7, max: fuzzFrameMaxBytes + 64 }), fc.integer({ min: fuzzFrameMaxBytes - 7, max: 0xffff_ffff })),
  bytesOf(64),
).map(([type, channel, size, payload]) => ({
  label: `frame of ${size} payload bytes, frame-max ${fuzzFrameMaxBytes}`,
  bytes: Buffer.concat([Buffer.from([type]), u16(channel), u32(size), payload]),
  replyCode: everywhere(REPLY_CODE.FRAME_ERROR),
}));

const knownFrameTypes: ReadonlySet<number> = new Set(Object.values(FRAME_TYPE));
const unknownFrameType: fc.Arbitrary<Fault> = fc.tuple(fc.integer({ min: 0, max: 0xff }).filter((type) => !knownFrameTypes.has(type)), fc.integer({ min: 0, max: 3 }), bytesOf(32))
  .map(([type, channel, payload]) => ({ label: `frame type ${type}`, bytes: rawFrame(type, channel, payload), replyCode: everywhere(REPLY_CODE.FRAME_ERROR) }));

// Spec 4.2.7: a heartbeat on another channel than 0, or with a payload, is a 501 frame error.
const badHeartbeat: fc.Arbitrary<Fault> = fc.oneof(
  fc.integer({ min: 1, max: 0xffff }).map((channel) => ({ label: `heartbeat on channel ${channel}`, bytes: rawFrame(FRAME_TYPE.HEARTBEAT, channel, Buffer.alloc(0)), replyCode: everywhere(REPLY_CODE.FRAME_ERROR) })),
  bytesOf(16, 1).map((payload) => ({ label: `heartbeat with ${payload.length} payload bytes`, bytes: rawFrame(FRAME_TYPE.HEARTBEAT, 0, payload), replyCode: everywhere(REPLY_CODE.FRAME_ERROR) })),
);

const unknownMethod: fc.Arbitrary<Fault> = fc.tuple(fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 0, max: 0xffff }), fc.constantFrom(0, 1), bytesOf(24))
  .filter(([classId, methodId]) => methodDefinitionById(classId, methodId) === undefined)
  .map(([classId, methodId, channel, rest]) => ({
    label: `unknown method ${classId}.${methodId} on channel ${channel}`,
    bytes: rawFrame(FRAME_TYPE.METHOD, channel, Buffer.concat([u16(classId), u16(methodId), rest])),
    replyCode: channel === 0 ? everywhere(REPLY_CODE.NOT_IMPLEMENTED) : onChannelOne(REPLY_CODE.NOT_IMPLEMENTED, REPLY_CODE.NOT_IMPLEMENTED),
  }));

const contentOnChannelZero: fc.Arbitrary<Fault> = fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 64 }))
  .map(([header, size]) => ({
    label: `content ${header ? 'header' : 'body'} frame on channel 0`,
    bytes: header ? encodeFrame(FRAME_TYPE.HEADER, 0, contentHeader(size)) : encodeFrame(FRAME_TYPE.BODY, 0, Buffer.alloc(size)),
    replyCode: everywhere(REPLY_CODE.UNEXPECTED_FRAME),
  }));

const contentWithoutPublish: fc.Arbitrary<Fault> = fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 64 }))
  .map(([header, size]) => ({
    label: `content ${header ? 'header' : 'body'} frame on channel 1 with no basic.publish`,
    bytes: header ? encodeFrame(FRAME_TYPE.HEADER, 1, contentHeader(size)) : encodeFrame(FRAME_TYPE.BODY, 1, Buffer.alloc(size)),
    replyCode: onChannelOne(REPLY_CODE.CHANNEL_ERROR, REPLY_CODE.UNEXPECTED_FRAME),
  }));

const bodyLongerThanDeclared: fc.Arbitrary<Fault> = fc.tuple(fc.integer({ min: 0, max: 64 }), fc.integer({ min: 1, max: 64 }))
  .map(([declared, extra]) => ({
    label: `body of ${declared + extra} bytes after a header declaring ${declared}`,
    bytes: Buffer.concat([publishFrame(1, 'fuzz'), encodeFrame(FRAME_TYPE.HEADER, 1, contentHeader(declared)), encodeFrame(FRAME_TYPE.BODY, 1, Buffer.alloc(declared + extra))]),
    replyCode: { channel: REPLY_CODE.UNEXPECTED_FRAME },
  }));

const wrongContentClass: fc.Arbitrary<Fault> = fc.integer({ min: 0, max: 0xffff }).filter((classId) => classId !== CLASS_ID.BASIC)
  .map((classId) => ({
    label: `content header of class ${classId} after basic.publish`,
    bytes: Buffer.concat([publishFrame(1, 'fuzz'), encodeFrame(FRAME_TYPE.HEADER, 1, contentHeader(0, classId))]),
    replyCode: { channel: REPLY_CODE.UNEXPECTED_FRAME },
  }));

/** A value that is not UTF-8: 0xff never occurs in UTF-8. */
const invalidUtf8 = fc.tuple(bytesOf(8), bytesOf(8)).map(([before, after]) => Buffer.concat([before.map((byte) => byte & 0x7f), Buffer.from([0xff]), after]));

/** A bad value inside a method on channel 0 (start-ok) or channel 1 (queue.declare): decoding fails before any state check. */
function inMethod(label: string, replyCode: number, startOk: (value: Buffer) => Buffer, declare: (value: Buffer) => Buffer, value: fc.Arbitrary<Buffer>): fc.Arbitrary<Fault> {
  return fc.tuple(value, fc.boolean()).map(([bad, onChannelZero]) => onChannelZero
    ? { label: `${label} in connection.start-ok`, bytes: encodeFrame(FRAME_TYPE.METHOD, 0, startOk(bad)), replyCode: everywhere(replyCode) }
    : { label: `${label} in queue.declare`, bytes: encodeFrame(FRAME_TYPE.METHOD, 1, declare(bad)), replyCode: onChannelOne(replyCode, replyCode) });
}

const invalidShortString = inMethod('invalid UTF-8 short string', REPLY_CODE.SYNTAX_ERROR,
  (bad) => startOkPayload(emptyTable, bad), (bad) => queueDeclarePayload(bad, emptyTable), invalidUtf8);

// Deeper than FIELD_NESTING_DEPTH_MAX, and small enough to stay one frame under frame-max (7 bytes a level).
const tooDeepTable = inMethod('field tables nested too deep', REPLY_CODE.FRAME_ERROR,
  (table) => startOkPayload(table, Buffer.from('PLAIN')), (table) => queueDeclarePayload(Buffer.from('q'), table),
  fc.integer({ min: FIELD_NESTING_DEPTH_MAX + 1, max: 500 }).map(nestedTable));

const hugeTableLength = inMethod('field table length past the frame', REPLY_CODE.FRAME_ERROR,
  (table) => startOkPayload(table, Buffer.from('PLAIN')), (table) => queueDeclarePayload(Buffer.from('q'), table),
  fc.tuple(fc.integer({ min: fuzzFrameMaxBytes, max: 0xffff_ffff }), bytesOf(16)).map(([length, rest]) => Buffer.concat([u32(length), rest])));

const fault: fc.Arbitrary<Fault> = fc.oneof(
  badFrameEnd, oversizedFrame, unknownFrameType, badHeartbeat, unknownMethod, contentOnChannelZero, contentWithoutPublish,
  bodyLongerThanDeclared, wrongContentClass, invalidShortString, tooDeepTable, hugeTableLength,
);

// ───────────────────────────── harmless frames before a fault ─────────────────────────────

const heartbeat = encodeFrame(FRAME_TYPE.HEARTBEAT, 0, Buffer.alloc(0));

/** Frames that change nothing a fault's reply code depends on: heartbeats anywhere, and on channel 1 a qos or an unroutable publish. */
function harmless(context: Exclude<FuzzContext, 'raw'>): fc.Arbitrary<Buffer> {
  if (context !== 'channel') return fc.constant(heartbeat);
  return fc.oneof(
    fc.constant(heartbeat),
    fc.integer({ min: 0, max: 0xffff }).map((prefetchCount) => encodeMethodFrame(1, { name: 'basic.qos', prefetchSize: 0, prefetchCount, global: false })),
    bytesOf(32).map((body) => Buffer.concat([publishFrame(1, 'fuzz.nowhere'), encodeFrame(FRAME_TYPE.HEADER, 1, contentHeader(body.length)), ...(body.length > 0 ? [encodeFrame(FRAME_TYPE.BODY, 1, body)] : [])])),
  );
}

function faultCase(context: Exclude<FuzzContext, 'raw'>): fc.Arbitrary<FuzzCase> {
  return fc.tuple(fc.array(harmless(context), { maxLength: 4 }), fault)
    .filter(([, chosen]) => chosen.replyCode[context] !== undefined)
    .map(([before, chosen]) => ({
      context, label: chosen.label, bytes: Buffer.concat([...before, chosen.bytes]), frameCount: before.length + 1,
      expect: { kind: 'connection-close', replyCode: chosen.replyCode[context]! },
    }));
}

/** Bytes that are not the protocol header: the broker answers with the header it speaks and hangs up (spec 4.2.2). */
const badProtocolHeader: fc.Arbitrary<FuzzCase> = fc.oneof(
  bytesOf(16, 1).filter((bytes) => bytes[0] !== PROTOCOL_HEADER[0]),
  fc.tuple(fc.integer({ min: 1, max: 7 }), bytesOf(8, 1)).map(([kept, rest]) => Buffer.concat([PROTOCOL_HEADER.subarray(0, kept), rest])).filter((bytes) => divergesFromHeader(bytes)),
).map((bytes) => ({ context: 'raw', label: 'not the AMQP 0-9-1 protocol header', bytes, frameCount: 0, expect: { kind: 'hang-up' } }));

function divergesFromHeader(bytes: Buffer): boolean {
  for (let index = 0; index < Math.min(bytes.length, PROTOCOL_HEADER.length); index++) if (bytes[index] !== PROTOCOL_HEADER[index]) return true;
  return false;
}

// ───────────────────────────── noise ─────────────────────────────

/** basic.publish, its header and its body, to a queue or exchange the noise may have declared (or the bridge's amq.topic). */
const publication: fc.Arbitrary<Buffer> = fc.tuple(
  fc.integer({ min: 0, max: 3 }), fc.constantFrom('', 'amq.topic', 'amq.fanout', 'q'), fc.constantFrom('q', 'fuzz', 'a.b'), basicProperties, bytesOf(24),
).map(([channel, exchange, routingKey, properties, body]) => publicationFrames(channel, exchange, routingKey, properties, body));

const noiseFrame: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 6, arbitrary: validFrame },
  { weight: 2, arbitrary: publication },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 64 })).map(([channel, size]) => encodeFrame(FRAME_TYPE.HEADER, channel, contentHeader(size))) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 0, max: 3 }), bytesOf(24)).map(([channel, body]) => encodeFrame(FRAME_TYPE.BODY, channel, body)) },
  { weight: 1, arbitrary: fc.constant(heartbeat) },
  { weight: 1, arbitrary: fault.map((chosen) => chosen.bytes) },
);

function sessionCase(maxSteps: number): fc.Arbitrary<FuzzCase> {
  return sessionBytes(maxSteps).map(({ bytes, steps }) => ({ context: 'channel', label: `a session of ${steps} steps`, bytes, frameCount: steps, expect: { kind: 'any' } }));
}

type Mutation = { readonly at: number; readonly kind: 'set' | 'cut' | 'insert' | 'remove'; readonly bytes: Buffer };

const mutation: fc.Arbitrary<Mutation> = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom('set', 'cut', 'insert', 'remove'),
  bytes: bytesOf(8, 1),
});

function mutate(bytes: Buffer, mutations: readonly Mutation[]): Buffer {
  let result = bytes;
  for (const { at, kind, bytes: change } of mutations) {
    if (result.length === 0) break;
    const index = at % result.length;
    if (kind === 'set') {
      result = Buffer.from(result);
      result[index] = change[0]!;
    } else if (kind === 'cut') {
      result = result.subarray(0, index);
    } else if (kind === 'insert') {
      result = Buffer.concat([result.subarray(0, index), change, result.subarray(index)]);
    } else {
      result = Buffer.concat([result.subarray(0, index), result.subarray(index + change.length)]);
    }
  }
  return result;
}

function noiseCase(maxFrames: number): fc.Arbitrary<FuzzCase> {
  return fc.tuple(
    fc.constantFrom<FuzzContext>('raw', 'header', 'open', 'channel', 'channel'),
    // Lengths spread evenly up to the most (fast-check's default size keeps arrays to a handful).
    fc.array(noiseFrame, { minLength: 1, maxLength: maxFrames, size: 'max' }),
    fc.array(mutation, { maxLength: 3 }),
  ).map(([context, frames, mutations]) => {
    const joined = Buffer.concat(frames);
    return {
      context, label: `${frames.length} noise frames, ${mutations.length} mutation(s): ${mutations.map((m) => m.kind).join(',') || 'none'}`,
      bytes: mutate(joined, mutations), frameCount: frames.length, expect: { kind: 'any' },
    };
  });
}

/** One well-formed frame cut short, then the half-close: the broker must notice the end, not wait for the rest. */
const truncatedCase: fc.Arbitrary<FuzzCase> = fc.tuple(fc.constantFrom<FuzzContext>('header', 'open', 'channel'), fc.array(validFrame, { maxLength: 3 }), validFrame, fc.nat())
  .map(([context, before, frame, cut]) => {
    const kept = 1 + (cut % (frame.length - 1));
    return {
      context, label: `${before.length} frame(s), then a frame cut after ${kept} of ${frame.length} bytes`,
      bytes: Buffer.concat([...before, frame.subarray(0, kept)]), frameCount: before.length + 1, expect: { kind: 'any' },
    };
  });

export interface FuzzMix {
  /** Most noise frames in one connection (at least 1). */
  readonly noiseFramesMax: number;
  /** How often noise comes, against 10 for all the fault, header and truncation cases together. */
  readonly noiseWeight: number;
  /** How often a session comes, on the same scale; it has up to noiseFramesMax steps. */
  readonly sessionWeight: number;
}

/** The test's mix: many short cases, half of them noise or sessions. */
export const suiteMix: FuzzMix = { noiseFramesMax: 24, noiseWeight: 5, sessionWeight: 5 };

/**
 * The fuzzer's cases: known faults in each context, bad protocol headers,
 * truncated frames and noise, in the proportions `mix` gives.
 */
export function amqpFuzzCase(mix: FuzzMix = suiteMix): fc.Arbitrary<FuzzCase> {
  return fc.oneof(
    { weight: 2, arbitrary: faultCase('header') },
    { weight: 2, arbitrary: faultCase('open') },
    { weight: 4, arbitrary: faultCase('channel') },
    { weight: 1, arbitrary: badProtocolHeader },
    { weight: 1, arbitrary: truncatedCase },
    { weight: mix.noiseWeight, arbitrary: noiseCase(mix.noiseFramesMax) },
    { weight: mix.sessionWeight, arbitrary: sessionCase(mix.noiseFramesMax) },
  );
}
