/**
 * Hand-written byte vectors for the AMQP 0-9-1 codec. Round-trip properties
 * cannot catch a bug that encoder and decoder share (say, bits packed from
 * the wrong end); these bytes were written from the spec, byte by byte, and
 * the frames mirror what RabbitMQ and amqplib put on the wire.
 *
 * hex() ignores spaces and '#' comments and takes 'quoted' runs as ASCII,
 * so each vector reads like an annotated capture.
 */
import { describe, expect, it } from 'vitest';
import {
  AmqpCodecError,
  AmqpFrameError,
  FRAME_TYPE,
  FrameReader,
  NEED_MORE,
  PROTOCOL_HEADER,
  REPLY_CODE,
  REPLY_CODE_SCOPE,
  booleanOf,
  checkProtocolHeader,
  decodeContentHeader,
  decodeFieldTable,
  decodeFrame,
  decodeMethod,
  decodeProperties,
  deliveryModeOf,
  encodeContentHeader,
  encodeFieldTable,
  encodeFrame,
  encodeHeartbeatFrame,
  encodeMessage,
  encodeMethod,
  encodeMethodFrame,
  encodeProperties,
  hasContent,
  integerOf,
  isChannelError,
  isConnectionError,
  replyCodeName,
  stringOf,
  toFieldTable,
  truncateShortString,
  type AmqpMethodInput,
  type FieldTable,
  type Frame,
} from '../../src/protocols/amqp/codec/index.js';

/** 'ascii' runs and hex digits, spaces and # comments ignored: hex("01 'AB' # x") = <01 41 42>. */
function hex(text: string): Buffer {
  const parts: Buffer[] = [];
  const code = text.replace(/#[^\n]*/g, '');
  for (const [, quoted, digits, other] of code.matchAll(/'([^']*)'|([0-9a-fA-F\s]+)|(.)/g)) {
    if (other !== undefined) throw new Error(`unexpected ${other} in hex vector`);
    if (quoted !== undefined) parts.push(Buffer.from(quoted, 'latin1'));
    else if (digits !== undefined) parts.push(Buffer.from(digits.replace(/\s+/g, ''), 'hex'));
  }
  return Buffer.concat(parts);
}

function frameOf(bytes: Buffer, frameMax = 131_072): Frame {
  const decoded = decodeFrame(bytes, 0, frameMax);
  if (decoded === NEED_MORE) throw new Error('expected a whole frame');
  expect(decoded.bytesConsumed).toBe(bytes.length);
  return decoded.frame;
}

/** Asserts that `run` throws the codec's typed error with this code and reply code. */
function expectCodecError(run: () => unknown, code: string, replyCode: number): AmqpCodecError {
  try {
    run();
  } catch (error: unknown) {
    expect(error).toBeInstanceOf(AmqpCodecError);
    const codecError = error as AmqpCodecError;
    expect({ code: codecError.code, replyCode: codecError.replyCode }).toEqual({ code, replyCode });
    return codecError;
  }
  throw new Error(`expected ${code}`);
}

describe('method frames as real peers send them', () => {
  // connection.start as RabbitMQ opens every connection, with a shortened
  // server-properties table (product, and capabilities as a nested table).
  const connectionStart = hex(`
    01 0000 00000061                      # method frame, channel 0, 97 payload bytes
    000a 000a                             # connection.start
    00 09                                 # version-major 0, version-minor 9
    0000003c                              # server-properties: 60 bytes
      07 'product' 'S' 00000008 'RabbitMQ'
      0c 'capabilities' 'F' 00000015
        12 'publisher_confirms' 't' 01
    0000000e 'AMQPLAIN PLAIN'             # mechanisms
    00000005 'en_US'                      # locales
    ce`);
  const connectionStartMethod: AmqpMethodInput = {
    name: 'connection.start',
    versionMajor: 0,
    versionMinor: 9,
    serverProperties: {
      product: { type: 'S', value: 'RabbitMQ' },
      capabilities: { type: 'F', value: { publisher_confirms: { type: 't', value: true } } },
    },
    mechanisms: Buffer.from('AMQPLAIN PLAIN'),
    locales: Buffer.from('en_US'),
  };

  it('connection.start decodes and encodes byte for byte', () => {
    const frame = frameOf(connectionStart);
    expect(frame.channel).toBe(0);
    expect(decodeMethod(frame.payload)).toEqual({ ...connectionStartMethod, classId: 10, methodId: 10 });
    expect(encodeMethodFrame(0, connectionStartMethod)).toEqual(connectionStart);
  });

  it('basic.publish from amqplib: reserved ticket, two short strings, mandatory in bit 0', () => {
    // channel.publish('logs', 'a.b', body, { mandatory: true }) on channel 1
    const bytes = hex(`01 0001 00000010  003c 0028  0000  04 'logs'  03 'a.b'  01  ce`);
    const method = {
      name: 'basic.publish',
      exchange: 'logs',
      routingKey: 'a.b',
      mandatory: true,
      immediate: false,
    } as const;
    expect(decodeMethod(frameOf(bytes).payload)).toEqual({ ...method, classId: 60, methodId: 40 });
    expect(encodeMethodFrame(1, method)).toEqual(bytes);
  });

  it('queue.declare packs passive..no-wait into one octet from the low bit (spec 4.2.5.2)', () => {
    // durable (bit 1) and auto-delete (bit 3) set: 0b0000_1010
    const payload = hex(`0032 000a  0000  05 'tasks'  0a  00000013 0d 'x-message-ttl' 'I' 0000ea60`);
    const method = {
      name: 'queue.declare',
      queue: 'tasks',
      passive: false,
      durable: true,
      exclusive: false,
      autoDelete: true,
      noWait: false,
      arguments: { 'x-message-ttl': { type: 'I', value: 60_000 } },
    } as const;
    expect(decodeMethod(payload)).toEqual({ ...method, classId: 50, methodId: 10 });
    expect(encodeMethod(method)).toEqual(payload);
  });

  it('basic.nack: a 64-bit delivery tag then multiple (bit 0) and requeue (bit 1)', () => {
    const payload = hex(`003c 0078  0000010000000001  03`);
    const method = { name: 'basic.nack', deliveryTag: 2 ** 40 + 1, multiple: true, requeue: true } as const;
    expect(decodeMethod(payload)).toEqual({ ...method, classId: 60, methodId: 120 });
    expect(encodeMethod(method)).toEqual(payload);
  });

  it('basic.deliver: bits between short strings get their own octet', () => {
    const payload = hex(`003c 003c  04 'ctag'  0000000000000007  01  00  02 'rk'`);
    const method = {
      name: 'basic.deliver',
      consumerTag: 'ctag',
      deliveryTag: 7,
      redelivered: true,
      exchange: '',
      routingKey: 'rk',
    } as const;
    expect(decodeMethod(payload)).toEqual({ ...method, classId: 60, methodId: 60 });
    expect(encodeMethod(method)).toEqual(payload);
  });

  it('connection.close names the failing method in failedClassId/failedMethodId', () => {
    const payload = hex(`000a 0032  0194  10 'NOT_FOUND - no q'  0032 0014`);
    expect(decodeMethod(payload)).toEqual({
      name: 'connection.close',
      classId: 10,
      methodId: 50,
      replyCode: 404,
      replyText: 'NOT_FOUND - no q',
      failedClassId: 50,
      failedMethodId: 20,
    });
  });

  it('reserved arguments are skipped on decode and written empty', () => {
    // connection.open with capabilities "x" and insist set, as a 0-8-era client might send
    const payload = hex(`000a 0028  01 '/'  01 'x'  01`);
    expect(decodeMethod(payload)).toEqual({ name: 'connection.open', classId: 10, methodId: 40, virtualHost: '/' });
    expect(encodeMethod({ name: 'connection.open', virtualHost: '/' })).toEqual(hex(`000a 0028  01 '/'  00  00`));
    expect(encodeMethod({ name: 'channel.open-ok' })).toEqual(hex(`0014 000b  00000000`));
  });

  it('exchange.unbind-ok has RabbitMQ id 51 and methods with content are marked', () => {
    expect(decodeMethod(hex(`0028 0033`)).name).toBe('exchange.unbind-ok');
    expect(hasContent('basic.publish')).toBe(true);
    expect(hasContent('basic.get-ok')).toBe(true);
    expect(hasContent('basic.get-empty')).toBe(false);
  });
});

describe('content header frames', () => {
  // amqplib: publish(ex, rk, Buffer.from('hello'), { contentType: 'text/plain', persistent: true })
  const headerFrame = hex(`
    02 0001 0000001a                 # header frame, channel 1, 26 bytes
    003c 0000 0000000000000005       # basic, weight 0, body size 5
    9000                             # flags: content-type (bit 15), delivery-mode (bit 12)
    0a 'text/plain'  02
    ce`);

  it('decodes, keeps the raw properties and re-encodes them byte for byte', () => {
    const header = decodeContentHeader(frameOf(headerFrame).payload);
    expect(header).toEqual({ classId: 60, bodySize: 5, rawProperties: hex(`9000 0a 'text/plain' 02`) });
    expect(decodeProperties(header.rawProperties)).toEqual({ contentType: 'text/plain', deliveryMode: 2 });
    expect(deliveryModeOf(header.rawProperties)).toBe(2);
    expect(encodeFrame(FRAME_TYPE.HEADER, 1, encodeContentHeader(60, 5, header.rawProperties))).toEqual(headerFrame);
    expect(encodeProperties({ contentType: 'text/plain', deliveryMode: 2 })).toEqual(header.rawProperties);
  });

  it('deliveryModeOf skips content-type, content-encoding and headers by their lengths', () => {
    const raw = hex(`f000  01 'a'  02 'gz'  00000007 01 'k' 'S' 00000000  01`);
    expect(deliveryModeOf(raw)).toBe(1);
    expect(decodeProperties(raw)).toEqual({
      contentType: 'a',
      contentEncoding: 'gz',
      headers: { k: { type: 'S', value: '' } },
      deliveryMode: 1,
    });
    expect(deliveryModeOf(hex(`8000 01 'a'`))).toBeUndefined();
  });

  it('the last property, cluster-id, is flag bit 2; the timestamp is 64-bit seconds', () => {
    expect(encodeProperties({ clusterId: 'c' })).toEqual(hex(`0004 01 'c'`));
    expect(encodeProperties({ timestamp: 1_700_000_000 })).toEqual(hex(`0040 000000006553f100`));
    expect(encodeProperties({})).toEqual(hex(`0000`));
  });

  it('rejects undefined flags, non-zero weight and malformed property lists', () => {
    expectCodecError(() => decodeProperties(hex(`0002`)), 'PROPERTY_FLAGS_INVALID', 502);
    expectCodecError(() => decodeProperties(hex(`0001 8000`)), 'PROPERTY_FLAGS_INVALID', 502);
    expect(decodeProperties(hex(`8001 0000 01 'a'`))).toEqual({ contentType: 'a' }); // empty continuation word
    expectCodecError(() => decodeContentHeader(hex(`003c 0001 0000000000000000 0000`)), 'HEADER_WEIGHT_INVALID', 502);
    expectCodecError(() => decodeContentHeader(hex(`003c 0000 0000000000000000 8000 05 'ab'`)), 'TRUNCATED', 501);
    expectCodecError(() => decodeContentHeader(hex(`003c 0000 0000000000000000 0000 00`)), 'TRAILING_BYTES', 501);
    expectCodecError(() => decodeContentHeader(hex(`003c 0000 0020000000000000 0000`)), 'VALUE_OUT_OF_RANGE', 502);
  });
});

describe('field values: one vector per RabbitMQ type tag', () => {
  const cases: [string, FieldTable, string][] = [
    ['t boolean', { k: { type: 't', value: true } }, `'t' 01`],
    ['b int8', { k: { type: 'b', value: -2 } }, `'b' fe`],
    ['B uint8', { k: { type: 'B', value: 254 } }, `'B' fe`],
    ['s int16', { k: { type: 's', value: -2 } }, `'s' fffe`],
    ['u uint16', { k: { type: 'u', value: 65534 } }, `'u' fffe`],
    ['I int32', { k: { type: 'I', value: -2 } }, `'I' fffffffe`],
    ['i uint32', { k: { type: 'i', value: 0xfffffffe } }, `'i' fffffffe`],
    ['l int64', { k: { type: 'l', value: -2n } }, `'l' fffffffffffffffe`],
    ['f float', { k: { type: 'f', value: 1.5 } }, `'f' 3fc00000`],
    ['d double', { k: { type: 'd', value: 1.5 } }, `'d' 3ff8000000000000`],
    ['D decimal', { k: { type: 'D', value: { scale: 2, digits: 12345 } } }, `'D' 02 00003039`],
    ['S long string', { k: { type: 'S', value: 'hé' } }, `'S' 00000003 68 c3a9`],
    ['S binary', { k: { type: 'S', value: Buffer.from([0xff, 0x00]) } }, `'S' 00000002 ff00`],
    ['x byte array', { k: { type: 'x', value: Buffer.from([1, 2]) } }, `'x' 00000002 0102`],
    [
      'A array',
      { k: { type: 'A', value: [{ type: 'b', value: 1 }, { type: 'V', value: null }] } },
      `'A' 00000003 'b' 01 'V'`,
    ],
    ['T timestamp', { k: { type: 'T', value: 0xfffffffffffffffen } }, `'T' fffffffffffffffe`],
    ['F table', { k: { type: 'F', value: {} } }, `'F' 00000000`],
    ['V void', { k: { type: 'V', value: null } }, `'V'`],
  ];

  for (const [label, table, valueHex] of cases) {
    it(label, () => {
      const value = hex(valueHex);
      const bytes = Buffer.concat([Buffer.alloc(4), hex(`01 'k'`), value]);
      bytes.writeUInt32BE(bytes.length - 4, 0);
      expect(encodeFieldTable(table)).toEqual(bytes);
      expect(decodeFieldTable(bytes)).toEqual(table);
    });
  }

  it('a "__proto__" key is an ordinary key, not a prototype', () => {
    const bytes = hex(`0000000c  09 '__proto__' 't' 01`);
    const table = decodeFieldTable(bytes);
    expect(Object.getPrototypeOf(table)).toBe(Object.prototype);
    expect(Object.keys(table)).toEqual(['__proto__']);
    expect(encodeFieldTable(table)).toEqual(bytes);
  });

  it('malformed tables raise typed errors', () => {
    expectCodecError(() => decodeFieldTable(hex(`00000003 01 'k' 'Z'`)), 'FIELD_TYPE_UNKNOWN', 501);
    expectCodecError(() => decodeFieldTable(hex(`00000004 01 'k' 'I' 00`)), 'TRUNCATED', 501);
    expectCodecError(() => decodeFieldTable(hex(`00000009 01 'k' 'S' ffffffff`)), 'TRUNCATED', 501);
    expectCodecError(() => decodeFieldTable(hex(`00000003 01 ff 'V'`)), 'UTF8_INVALID', 502);
    // 70 tables nested inside each other: 'F' + length per level
    let nested = hex(`00000000`);
    for (let level = 0; level < 70; level++) {
      const body = Buffer.concat([hex(`01 'k' 'F'`), nested]);
      nested = Buffer.concat([Buffer.alloc(4), body]);
      nested.writeUInt32BE(body.length, 0);
    }
    expectCodecError(() => decodeFieldTable(nested), 'NESTING_TOO_DEEP', 501);
  });
});

describe('plain values for server-built tables and broker reads', () => {
  it('maps JS types to the tags clients expect', () => {
    expect(
      toFieldTable({
        s: 'x', t: true, i: -5, l: 2 ** 40, d: 0.5, n: 3n, b: Buffer.from([1]), v: null, a: [1], f: { g: 'h' },
      }),
    ).toEqual({
      s: { type: 'S', value: 'x' },
      t: { type: 't', value: true },
      i: { type: 'I', value: -5 },
      l: { type: 'l', value: 2n ** 40n },
      d: { type: 'd', value: 0.5 },
      n: { type: 'l', value: 3n },
      b: { type: 'x', value: Buffer.from([1]) },
      v: { type: 'V', value: null },
      a: { type: 'A', value: [{ type: 'I', value: 1 }] },
      f: { type: 'F', value: { g: { type: 'S', value: 'h' } } },
    });
  });

  it('reads integers of any width, strings and booleans', () => {
    expect(integerOf({ type: 'b', value: 5 })).toBe(5);
    expect(integerOf({ type: 'l', value: 60_000n })).toBe(60_000);
    expect(integerOf({ type: 'l', value: 2n ** 60n })).toBeUndefined();
    expect(integerOf({ type: 'S', value: '5' })).toBeUndefined();
    expect(integerOf(undefined)).toBeUndefined();
    expect(stringOf({ type: 'S', value: 'dlx' })).toBe('dlx');
    expect(stringOf({ type: 'S', value: Buffer.from([0xff]) })).toBeUndefined();
    expect(booleanOf({ type: 't', value: false })).toBe(false);
  });
});

describe('frame errors (spec 4.2.3, reply code 501)', () => {
  it('rejects a bad frame-end octet', () => {
    expectCodecError(() => decodeFrame(hex(`08 0000 00000000 00`), 0, 4096), 'FRAME_END_INVALID', 501);
  });

  it('rejects a frame over frame-max as soon as its header arrives', () => {
    const error = expectCodecError(() => decodeFrame(hex(`03 0001 00000ff9`), 0, 4096), 'FRAME_TOO_LARGE', 501);
    expect(error).toBeInstanceOf(AmqpFrameError);
    expect(decodeFrame(hex(`03 0001 00000ff8`), 0, 4096)).toBe(NEED_MORE);
  });

  it('rejects unknown frame types and heartbeats off channel 0 (spec 4.2.7)', () => {
    expectCodecError(() => decodeFrame(hex(`04 0000 00000000 ce`), 0, 4096), 'FRAME_TYPE_UNKNOWN', 501);
    expectCodecError(() => decodeFrame(hex(`08 0001 00000000 ce`), 0, 4096), 'HEARTBEAT_INVALID', 501);
    expectCodecError(() => decodeFrame(hex(`08 0000 00000001 00 ce`), 0, 4096), 'HEARTBEAT_INVALID', 501);
    expect(encodeHeartbeatFrame()).toEqual(hex(`08 0000 00000000 ce`));
  });

  it('decodes a frame at an offset and leaves what follows', () => {
    const decoded = decodeFrame(hex(`ffff 08 0000 00000000 ce 01`), 2, 4096);
    expect(decoded).not.toBe(NEED_MORE);
    if (decoded !== NEED_MORE) expect(decoded.bytesConsumed).toBe(8);
  });
});

describe('method errors', () => {
  it('an unknown class or method is 540 NOT_IMPLEMENTED and names the ids', () => {
    const error = expectCodecError(() => decodeMethod(hex(`001e 000a 00`)), 'METHOD_UNKNOWN', 540);
    expect([error.classId, error.methodId]).toEqual([30, 10]);
    expectCodecError(() => decodeMethod(hex(`003c 0029`)), 'METHOD_UNKNOWN', 540);
  });

  it('truncated and padded arguments are 501 FRAME_ERROR, located at the method', () => {
    const error = expectCodecError(() => decodeMethod(hex(`003c 0050 00000000`)), 'TRUNCATED', 501);
    expect([error.classId, error.methodId]).toEqual([60, 80]);
    expectCodecError(() => decodeMethod(hex(`003c 0050 0000000000000001 00 00`)), 'TRAILING_BYTES', 501);
    expectCodecError(() => decodeMethod(hex(`003c`)), 'TRUNCATED', 501);
  });

  it('invalid UTF-8 in a short string and delivery tags beyond 2^53-1 are 502 SYNTAX_ERROR', () => {
    expectCodecError(() => decodeMethod(hex(`003c 0028 0000 00 02 c328 00`)), 'UTF8_INVALID', 502);
    expectCodecError(() => decodeMethod(hex(`003c 0050 0020000000000000 00`)), 'VALUE_OUT_OF_RANGE', 502);
    expect(decodeMethod(hex(`003c 0050 001fffffffffffff 00`))).toMatchObject({ deliveryTag: Number.MAX_SAFE_INTEGER });
  });

  it('values that do not fit their wire type are refused on encode with 541', () => {
    const longName = 'q'.repeat(256);
    const purge = { name: 'queue.purge', queue: longName, noWait: false } as const;
    expectCodecError(() => encodeMethod(purge), 'ENCODE_INVALID', 541);
    const qos = { name: 'basic.qos', prefetchSize: -1, prefetchCount: 0, global: false } as const;
    expectCodecError(() => encodeMethod(qos), 'ENCODE_INVALID', 541);
    expectCodecError(() => encodeMethod({ ...qos, prefetchSize: 0, global: 1 as unknown as boolean }), 'ENCODE_INVALID', 541);
    expectCodecError(() => encodeMethodFrame(70_000, { name: 'tx.select' }), 'ENCODE_INVALID', 541);
    expect(truncateShortString(`é${longName}`)).toBe(`é${'q'.repeat(253)}`);
    expect(truncateShortString('ok')).toBe('ok');
  });
});

describe('protocol header (spec 4.2.2)', () => {
  it('accepts AMQP 0-9-1 and needs all 8 bytes to do so', () => {
    expect(checkProtocolHeader(hex(`'AMQP' 00 00 09 01`))).toEqual({ accepted: true, bytesConsumed: 8 });
    expect(checkProtocolHeader(hex(`'AMQP' 00 00`))).toBe(NEED_MORE);
  });

  it('answers anything else with its own header, from the first differing byte', () => {
    const amqp091 = hex(`'AMQP' 00 00 09 01`);
    expect(checkProtocolHeader(hex(`'AMQP' 01 01 00 09`))).toEqual({ accepted: false, reply: amqp091 }); // 0-9
    expect(checkProtocolHeader(hex(`'AMQP' 00 01 00 00`))).toEqual({ accepted: false, reply: amqp091 }); // 1.0
    expect(checkProtocolHeader(hex(`'GET '`))).toEqual({ accepted: false, reply: amqp091 });
    expect(PROTOCOL_HEADER).toEqual(amqp091);
  });
});

describe('FrameReader', () => {
  it('reads the protocol header, then frames, then applies the tuned frame-max', () => {
    const reader = new FrameReader();
    reader.push(hex(`'AMQP' 00 00 09`));
    expect(reader.readProtocolHeader()).toBe(NEED_MORE);
    reader.push(hex(`01  08 0000 00000000 ce  03 0001`));
    expect(reader.readProtocolHeader()).toEqual({ accepted: true, bytesConsumed: 8 });
    expect(reader.readFrame()).toMatchObject({ type: FRAME_TYPE.HEARTBEAT, channel: 0 });
    expect(reader.readFrame()).toBe(NEED_MORE);
    reader.setFrameMax(8192);
    reader.push(hex(`00001ff8`)); // 8184 + 8 = 8192 bytes: allowed after tuning
    expect(reader.readFrame()).toBe(NEED_MORE);
    reader.push(Buffer.alloc(8184));
    reader.push(hex(`ce`));
    expect(reader.readFrame()).toMatchObject({ type: FRAME_TYPE.BODY, channel: 1, payload: Buffer.alloc(8184) });
    expect(reader.bufferedBytes).toBe(0);
  });

  it('keeps failing once the stream is broken', () => {
    const reader = new FrameReader();
    reader.push(hex(`08 0000 00000000 00`));
    expectCodecError(() => reader.readFrame(), 'FRAME_END_INVALID', 501);
    reader.push(encodeHeartbeatFrame());
    expectCodecError(() => reader.readFrame(), 'FRAME_END_INVALID', 501);
  });
});

describe('encodeMessage', () => {
  it('writes method, header and body frames split at frameMax - 8, in one buffer', () => {
    const body = Buffer.alloc(4096 - 8 + 3, 0x61);
    const encoded = encodeMessage(
      {
        channel: 2,
        method: {
          name: 'basic.deliver',
          consumerTag: 'c',
          deliveryTag: 1,
          redelivered: false,
          exchange: '',
          routingKey: 'k',
        },
        rawProperties: hex(`0000`),
        body,
      },
      4096,
    );
    const expected = Buffer.concat([
      hex(`01 0002 00000012  003c 003c 01 'c' 0000000000000001 00 00 01 'k' ce`),
      hex(`02 0002 0000000e  003c 0000 0000000000000ffb 0000 ce`),
      hex(`03 0002 00000ff8`), body.subarray(0, 4088), hex(`ce`),
      hex(`03 0002 00000003 616161 ce`),
    ]);
    expect(encoded).toEqual(expected);
  });

  it('sends no body frame for an empty body', () => {
    const encoded = encodeMessage(
      {
        channel: 1,
        method: { name: 'basic.get-ok', deliveryTag: 1, redelivered: false, exchange: '', routingKey: '', messageCount: 0 },
        rawProperties: hex(`0000`),
        body: Buffer.alloc(0),
      },
      4096,
    );
    expect(encoded.subarray(-22)).toEqual(hex(`02 0001 0000000e 003c 0000 0000000000000000 0000 ce`));
  });
});

describe('reply codes (XML <constant> classes)', () => {
  it('knows which codes close the channel and which the connection', () => {
    expect(isChannelError(REPLY_CODE.NOT_FOUND)).toBe(true);
    expect(isChannelError(REPLY_CODE.PRECONDITION_FAILED)).toBe(true);
    expect(isConnectionError(REPLY_CODE.FRAME_ERROR)).toBe(true);
    expect(isConnectionError(REPLY_CODE.CONNECTION_FORCED)).toBe(true);
    expect(REPLY_CODE_SCOPE[REPLY_CODE.REPLY_SUCCESS]).toBe('none');
    expect(replyCodeName(406)).toBe('PRECONDITION_FAILED');
    expect(replyCodeName(999)).toBeUndefined();
  });
});
