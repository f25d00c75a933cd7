/**
 * The MQTT framer and codec, example by example: fixed-header limits, packets
 * split and joined across chunks, client-only packet types, the 3.1.1 rules we
 * add to mqtt-packet's, and hand-written encoders checked byte for byte and
 * against mqtt-packet's own parser; and the start-up check of the MQTT limits.
 */
import { generate, parser as createParser, type IConnectPacket, type Packet } from 'mqtt-packet';
import { describe, expect, it } from 'vitest';
import {
  encodeConnack,
  encodePuback,
  encodePubcomp,
  encodePublish,
  encodePubrec,
  encodePubrel,
  encodeSuback,
  encodeUnsuback,
  PacketDecoder,
  peekConnectProtocol,
  pingrespBytes,
} from '../../src/protocols/mqtt/codec.js';
import { PacketFramer, readFixedHeader } from '../../src/protocols/mqtt/framer.js';

function decodeWithMqttPacket(bytes: Buffer): Packet[] {
  const parser = createParser({ protocolVersion: 4 });
  const packets: Packet[] = [];
  parser.on('packet', (packet: Packet) => packets.push(packet));
  parser.on('error', (error: Error) => {
    throw error;
  });
  parser.parse(bytes);
  return packets;
}

const pingreq = Buffer.from([0xc0, 0x00]);

describe('readFixedHeader', () => {
  it('reads one- to four-byte remaining lengths [MQTT-2.2.3]', () => {
    expect(readFixedHeader(Buffer.from([0x30, 0x00]), 0)).toEqual({ kind: 'header', headerBytes: 2, remainingLength: 0 });
    expect(readFixedHeader(Buffer.from([0x30, 0x7f]), 0)).toEqual({ kind: 'header', headerBytes: 2, remainingLength: 127 });
    expect(readFixedHeader(Buffer.from([0x30, 0x80, 0x01]), 0)).toEqual({ kind: 'header', headerBytes: 3, remainingLength: 128 });
    expect(readFixedHeader(Buffer.from([0x30, 0xff, 0xff, 0xff, 0x7f]), 0)).toEqual({ kind: 'header', headerBytes: 5, remainingLength: 268_435_455 });
  });

  it('asks for more when the length is cut, and refuses a fifth length byte', () => {
    expect(readFixedHeader(Buffer.from([0x30]), 0)).toEqual({ kind: 'need-more' });
    expect(readFixedHeader(Buffer.from([0x30, 0x80, 0x80]), 0)).toEqual({ kind: 'need-more' });
    expect(readFixedHeader(Buffer.from([0x30, 0x80, 0x80, 0x80, 0x80, 0x01]), 0).kind).toBe('malformed');
  });
});

describe('PacketFramer', () => {
  it('yields a chunk that holds exactly one packet as that very chunk (a sequential client\'s every read: no view made)', () => {
    const framer = new PacketFramer(1024);
    const chunk = Buffer.from(pingreq);
    framer.push(chunk);
    const frame = framer.next();
    expect(frame.kind === 'packet' && frame.bytes).toBe(chunk);
    expect(framer.bufferedBytes).toBe(0);
    expect(framer.next()).toEqual({ kind: 'need-more' });
    framer.push(Buffer.from([0xe0, 0x00]));
    expect(framer.next()).toEqual({ kind: 'packet', bytes: Buffer.from([0xe0, 0x00]) });
  });

  it('yields several packets from one chunk as views, without copying', () => {
    const chunk = Buffer.concat([pingreq, pingreq, Buffer.from([0xe0])]);
    const framer = new PacketFramer(1024);
    framer.push(chunk);
    const first = framer.next();
    expect(first).toEqual({ kind: 'packet', bytes: pingreq });
    if (first.kind === 'packet') expect(first.bytes.buffer).toBe(chunk.buffer);
    expect(framer.next()).toEqual({ kind: 'packet', bytes: pingreq });
    expect(framer.next()).toEqual({ kind: 'need-more' });
    framer.push(Buffer.from([0x00]));
    expect(framer.next()).toEqual({ kind: 'packet', bytes: Buffer.from([0xe0, 0x00]) });
    expect(framer.bufferedBytes).toBe(0);
  });

  it('collects a packet split over many chunks, then goes on with the rest of the last chunk', () => {
    const publish = generate({ cmd: 'publish', topic: 'a/b', payload: Buffer.alloc(300, 7), qos: 0, retain: false, dup: false });
    const stream = Buffer.concat([publish, pingreq]);
    const framer = new PacketFramer(1024);
    for (let offset = 0; offset < 290; offset += 10) {
      framer.push(stream.subarray(offset, offset + 10));
      expect(framer.next()).toEqual({ kind: 'need-more' });
    }
    framer.push(stream.subarray(290));
    expect(framer.next()).toEqual({ kind: 'packet', bytes: publish });
    expect(framer.next()).toEqual({ kind: 'packet', bytes: pingreq });
    expect(framer.next()).toEqual({ kind: 'need-more' });
  });

  it('keeps its own copy of what it holds of a lent chunk, every chunk of a packet split over many (ownHeldBytes)', () => {
    const publish = generate({ cmd: 'publish', topic: 'a/b', payload: Buffer.alloc(300, 7), qos: 0, retain: false, dup: false });
    // A PINGREQ, then the PUBLISH cut after its first byte, inside its body, and at its end: each part lent in the same buffer.
    const stream = Buffer.concat([pingreq, publish, pingreq]);
    const lent = Buffer.alloc(stream.length);
    const framer = new PacketFramer(1024);
    const yielded: Buffer[] = [];
    let start = 0;
    for (const end of [3, 150, 250, stream.length]) {
      stream.copy(lent, 0, start, end);
      framer.push(lent.subarray(0, end - start));
      for (let frame = framer.next(); frame.kind === 'packet'; frame = framer.next()) yielded.push(Buffer.from(frame.bytes));
      framer.ownHeldBytes(lent);
      lent.fill(0xee);
      start = end;
    }
    expect(yielded).toEqual([pingreq, publish, pingreq]);
  });

  it('copies nothing of a chunk that was not lent, nor bytes it already joined into a buffer of its own', () => {
    const publish = generate({ cmd: 'publish', topic: 'a/b', payload: Buffer.alloc(300, 7), qos: 0, retain: false, dup: false });
    const lent = Buffer.alloc(64);
    const framer = new PacketFramer(1024);
    const owned = publish.subarray(0, 100);
    framer.push(owned);
    framer.next();
    framer.ownHeldBytes(lent);
    // Still a view of the chunk pushed: it was someone else's buffer, not the lent one.
    owned[99] = 0x55;
    framer.push(publish.subarray(100));
    const frame = framer.next();
    expect(frame.kind).toBe('packet');
    expect(frame.kind === 'packet' && frame.bytes[99]).toBe(0x55);
  });

  it('refuses a packet over packetBytesMax from its fixed header alone', () => {
    const framer = new PacketFramer(1024);
    framer.push(Buffer.from([0x30, 0xff, 0xff, 0xff, 0x7f]));
    expect(framer.next()).toEqual({ kind: 'too-large', packetBytes: 268_435_460 });
    expect(framer.next().kind).toBe('malformed');
  });

  it('accepts a packet of exactly packetBytesMax and refuses one byte more', () => {
    const exact = new PacketFramer(102);
    exact.push(Buffer.concat([Buffer.from([0x30, 100]), Buffer.alloc(100)]));
    expect(exact.next().kind).toBe('packet');
    const over = new PacketFramer(102);
    over.push(Buffer.from([0x30, 101]));
    expect(over.next()).toEqual({ kind: 'too-large', packetBytes: 103 });
  });

  it('shows the first byte of the next packet as soon as it arrives', () => {
    const framer = new PacketFramer(1024);
    expect(framer.peekFirstByte()).toBeUndefined();
    framer.push(Buffer.from([0x10]));
    expect(framer.peekFirstByte()).toBe(0x10);
  });
});

describe('PacketDecoder', () => {
  const decoder = new PacketDecoder();
  const decode = (packet: Packet | Buffer) => decoder.decode(Buffer.isBuffer(packet) ? packet : generate(packet, { protocolVersion: 4 }));

  it('decodes every packet a client may send', () => {
    const packets: Packet[] = [
      { cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clientId: 'c', clean: true, keepalive: 10, username: 'u', password: Buffer.from('p') },
      { cmd: 'publish', topic: 't', payload: Buffer.from('x'), qos: 1, messageId: 5, retain: true, dup: false },
      { cmd: 'puback', messageId: 1 },
      { cmd: 'pubrec', messageId: 2 },
      { cmd: 'pubrel', messageId: 3 },
      { cmd: 'pubcomp', messageId: 4 },
      { cmd: 'subscribe', messageId: 6, subscriptions: [{ topic: 'a/#', qos: 2 }] },
      { cmd: 'unsubscribe', messageId: 7, unsubscriptions: ['a/#'] },
      { cmd: 'pingreq' },
      { cmd: 'disconnect' },
    ];
    for (const packet of packets) expect(decode(packet)).toMatchObject({ kind: 'packet', packet: { cmd: packet.cmd } });
  });

  it('refuses packets only a server may send', () => {
    expect(decode({ cmd: 'connack', returnCode: 0, sessionPresent: false })).toMatchObject({ kind: 'malformed' });
    expect(decode({ cmd: 'suback', messageId: 1, granted: [0] })).toMatchObject({ kind: 'malformed' });
    expect(decode(pingrespBytes)).toMatchObject({ kind: 'malformed' });
  });

  it('refuses packet identifier 0 [MQTT-2.3.1-1]', () => {
    expect(decode(Buffer.from([0x32, 0x05, 0x00, 0x01, 0x74, 0x00, 0x00]))).toMatchObject({ kind: 'malformed', reason: expect.stringContaining('MQTT-2.3.1-1') });
    expect(decode(Buffer.from([0x40, 0x02, 0x00, 0x00]))).toMatchObject({ kind: 'malformed' });
    expect(decode(Buffer.from([0x82, 0x06, 0x00, 0x00, 0x00, 0x01, 0x61, 0x00]))).toMatchObject({ kind: 'malformed' });
  });

  it('refuses a password without a user name [MQTT-3.1.2-22]', () => {
    // flags 0x42: password + clean session, no user name.
    const bytes = Buffer.from([0x10, 0x11, 0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0x42, 0x00, 0x0a, 0x00, 0x01, 0x63, 0x00, 0x02, 0x70, 0x77]);
    expect(decode(bytes)).toMatchObject({ kind: 'malformed', reason: expect.stringContaining('MQTT-3.1.2-22') });
  });

  it('refuses reserved header flags [MQTT-2.2.2-2] and the reserved packet type 0', () => {
    expect(decode(Buffer.from([0xc1, 0x00]))).toMatchObject({ kind: 'malformed' });
    expect(decode(Buffer.from([0x00, 0x00]))).toMatchObject({ kind: 'malformed' });
  });

  const connectWith = (fields: Partial<IConnectPacket>): Buffer =>
    generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clientId: 'c', clean: true, keepalive: 10, ...fields }, { protocolVersion: 4 });

  it('refuses ill-formed UTF-8 in any CONNECT string, and accepts a real U+FFFD [MQTT-1.5.3-1]', () => {
    // generate() writes strings as UTF-8; put the bad bytes where a string's own bytes were.
    const withBytes = (packet: Buffer, marker: string, bad: number[]): Buffer => {
      const at = packet.indexOf(marker);
      const copy = Buffer.from(packet);
      Buffer.from(bad).copy(copy, at);
      return copy;
    };
    expect(decode(withBytes(connectWith({ clientId: 'XX' }), 'XX', [0xc3, 0x28]))).toMatchObject({ kind: 'malformed', reason: expect.stringContaining('client identifier') });
    const will = { topic: 'w/YY', payload: Buffer.from('bye'), qos: 1 as const, retain: false };
    expect(decode(withBytes(connectWith({ will }), 'YY', [0xff, 0xfe]))).toMatchObject({ kind: 'malformed', reason: expect.stringContaining('will topic') });
    expect(decode(withBytes(connectWith({ username: 'ZZZ', password: Buffer.from('p') }), 'ZZZ', [0xed, 0xa0, 0x80]))).toMatchObject({
      kind: 'malformed',
      reason: expect.stringContaining('user name'),
    });
    expect(decode(connectWith({ clientId: 'c\ufffd', username: '\ufffd', password: Buffer.from([0xff]), will }))).toMatchObject({ kind: 'packet' });
  });

  it('refuses U+0000 in a string [MQTT-1.5.3-2] and bytes after the last CONNECT field', () => {
    expect(decode(connectWith({ clientId: 'a\u0000b' }))).toMatchObject({ kind: 'malformed', reason: expect.stringContaining('MQTT-1.5.3-2') });
    const connect = connectWith({});
    const longer = Buffer.concat([Buffer.from([0x10, (connect[1] ?? 0) + 1]), connect.subarray(2), Buffer.from([0x00])]);
    expect(decode(longer)).toMatchObject({ kind: 'malformed', reason: expect.stringContaining('after its last field') });
  });

  it('accepts U+FFFD written as UTF-8 in a topic and refuses a lone continuation byte [MQTT-1.5.3-1]', () => {
    expect(decode({ cmd: 'publish', topic: 'a/\ufffd', payload: Buffer.from('x'), qos: 0, retain: false, dup: false })).toMatchObject({ kind: 'packet' });
    expect(decode(Buffer.from([0x30, 0x04, 0x00, 0x02, 0x61, 0x80]))).toMatchObject({ kind: 'malformed', reason: expect.stringContaining('MQTT-1.5.3-1') });
    expect(decode({ cmd: 'unsubscribe', messageId: 1, unsubscriptions: ['ok', 'a/\ufffd'] })).toMatchObject({ kind: 'packet' });
  });

  it('stays usable after a malformed packet', () => {
    expect(decode(Buffer.from([0x00, 0x00])).kind).toBe('malformed');
    expect(decode(pingreq)).toMatchObject({ kind: 'packet', packet: { cmd: 'pingreq' } });
  });
});

describe('peekConnectProtocol', () => {
  it('reads the protocol name and level of a CONNECT, whatever the level', () => {
    const connect = generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clientId: 'c', clean: true, keepalive: 0 });
    expect(peekConnectProtocol(connect)).toEqual({ name: 'MQTT', level: 4 });
    const level9 = Buffer.from(connect);
    level9[8] = 9;
    expect(peekConnectProtocol(level9)).toEqual({ name: 'MQTT', level: 9 });
    expect(peekConnectProtocol(pingreq)).toBeUndefined();
    expect(peekConnectProtocol(Buffer.from([0x10, 0x03, 0x00, 0x04, 0x4d]))).toBeUndefined();
  });
});

describe('encoders', () => {
  it('write the fixed acks byte for byte', () => {
    expect(encodeConnack(0, true)).toEqual(Buffer.from([0x20, 0x02, 0x01, 0x00]));
    // Session present is 0 whenever the return code is not 0 [MQTT-3.2.2-4].
    expect(encodeConnack(5, true)).toEqual(Buffer.from([0x20, 0x02, 0x00, 0x05]));
    expect(encodePuback(0x1234)).toEqual(Buffer.from([0x40, 0x02, 0x12, 0x34]));
    expect(encodePubrec(1)).toEqual(Buffer.from([0x50, 0x02, 0x00, 0x01]));
    expect(encodePubrel(65535)).toEqual(Buffer.from([0x62, 0x02, 0xff, 0xff]));
    expect(encodePubcomp(2)).toEqual(Buffer.from([0x70, 0x02, 0x00, 0x02]));
    expect(encodeUnsuback(3)).toEqual(Buffer.from([0xb0, 0x02, 0x00, 0x03]));
    expect(pingrespBytes).toEqual(Buffer.from([0xd0, 0x00]));
  });

  it('produce what mqtt-packet decodes back to the same packet', () => {
    const bytes = Buffer.concat([
      encodeConnack(0, true),
      encodePuback(7),
      encodePubrel(8),
      encodeSuback(9, [0, 1, 2, 0x80]),
      encodePublish({ topic: 'a/b', payload: new Uint8Array([1, 2, 3]), qos: 2, retain: true, dup: true, packetId: 10 }),
      encodePublish({ topic: 'c', payload: new Uint8Array(0), qos: 0, retain: false, dup: false }),
    ]);
    expect(decodeWithMqttPacket(bytes)).toMatchObject([
      { cmd: 'connack', sessionPresent: true, returnCode: 0 },
      { cmd: 'puback', messageId: 7 },
      { cmd: 'pubrel', messageId: 8 },
      { cmd: 'suback', messageId: 9, granted: [0, 1, 2, 0x80] },
      { cmd: 'publish', topic: 'a/b', payload: Buffer.from([1, 2, 3]), qos: 2, retain: true, dup: true, messageId: 10 },
      { cmd: 'publish', topic: 'c', qos: 0, retain: false, dup: false },
    ]);
  });

  it('refuse a packet id out of range', () => {
    expect(() => encodePuback(0)).toThrow();
    expect(() => encodePuback(65536)).toThrow();
  });
});

describe('limits', () => {
  it('refuse bad overrides with an error that names the limit', async () => {
    const { resolveMqttLimits, MqttLimitError, defaultMqttLimits } = await import('../../src/protocols/mqtt/limits.js');
    expect(resolveMqttLimits({})).toEqual(defaultMqttLimits);
    expect(() => resolveMqttLimits({ packetBytesMax: 10 })).toThrow(MqttLimitError);
    expect(() => resolveMqttLimits({ packetBytesMax: 10 })).toThrow(/packetBytesMax/);
    expect(() => resolveMqttLimits({ packetBytesMax: 300_000_000 })).toThrow(/packetBytesMax/);
    expect(() => resolveMqttLimits({ keepAliveGraceFactor: 0.5 })).toThrow(/keepAliveGraceFactor/);
    expect(() => resolveMqttLimits({ inboundAcksPendingMax: 1 })).toThrow(/inboundAcksPendingMax/);
  });
});
