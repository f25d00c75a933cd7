/**
 * Building blocks of the AMQP fuzzer (amqp-fuzz-cases.ts,
 * amqp-fuzz-sessions.ts): raw big-endian fields and frames for bytes the
 * codec would refuse to encode, and arbitraries of the values that travel
 * inside well-formed frames (field tables, basic properties, publications).
 */
import fc from 'fast-check';
import {
  CLASS_ID, encodeContentHeader, encodeFrame, encodeMethodFrame, encodeProperties, FRAME_END, FRAME_TYPE,
  type BasicProperties, type FieldTable, type FieldValue,
} from '../src/protocols/amqp/codec/index.js';

export const u16 = (value: number): Buffer => {
  const bytes = Buffer.alloc(2);
  bytes.writeUInt16BE(value);
  return bytes;
};
export const u32 = (value: number): Buffer => {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(value);
  return bytes;
};
export const shortString = (bytes: Buffer): Buffer => Buffer.concat([Buffer.from([bytes.length]), bytes]);
export const emptyTable = u32(0);
export const bytesOf = (maxLength: number, minLength = 0): fc.Arbitrary<Buffer> => fc.uint8Array({ minLength, maxLength }).map((array) => Buffer.from(array));

/** A whole frame around any payload, with any frame-end octet. */
export function rawFrame(type: number, channel: number, payload: Buffer, frameEnd = FRAME_END): Buffer {
  return Buffer.concat([Buffer.from([type]), u16(channel), u32(payload.length), payload, Buffer.from([frameEnd])]);
}

const fieldValue: fc.Arbitrary<FieldValue> = fc.oneof(
  fc.boolean().map((value) => ({ type: 't', value }) as const),
  fc.integer().map((value) => ({ type: 'I', value }) as const),
  fc.string({ maxLength: 12 }).map((value) => ({ type: 'S', value }) as const),
  fc.constant({ type: 'V', value: null } as const),
);
export const fieldTable: fc.Arbitrary<FieldTable> = fc.dictionary(fc.string({ maxLength: 8 }), fieldValue, { maxKeys: 3 });

/** Any basic properties, persistent or not: they travel raw into queues, the log and deliveries. */
export const basicProperties: fc.Arbitrary<BasicProperties> = fc.record({
  contentType: fc.string({ maxLength: 12 }),
  headers: fieldTable,
  deliveryMode: fc.oneof(fc.constantFrom(1, 2), fc.integer({ min: 0, max: 0xff })),
  priority: fc.integer({ min: 0, max: 0xff }),
  messageId: fc.string({ maxLength: 12 }),
  timestamp: fc.maxSafeNat(),
  expiration: fc.string({ maxLength: 6 }),
}, { requiredKeys: [] });

/** basic.publish, its content header and (unless empty) one body frame; mandatory for even-sized bodies. */
export function publicationFrames(channel: number, exchange: string, routingKey: string, properties: BasicProperties, body: Buffer): Buffer {
  return Buffer.concat([
    encodeMethodFrame(channel, { name: 'basic.publish', exchange, routingKey, mandatory: body.length % 2 === 0, immediate: false }),
    encodeFrame(FRAME_TYPE.HEADER, channel, encodeContentHeader(CLASS_ID.BASIC, body.length, encodeProperties(properties))),
    ...(body.length > 0 ? [encodeFrame(FRAME_TYPE.BODY, channel, body)] : []),
  ]);
}
