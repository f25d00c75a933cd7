/**
 * Generated MQTT 3.1.1 traffic for fuzzing a broker, as fast-check
 * arbitraries: the property test (test/property/mqtt-fuzz.test.ts) and the
 * bench (`npm run bench -- fuzz`, tools/bench-fuzz.ts) draw from the same ones.
 *
 * A case is one TCP connection. Most cases are a good CONNECT, a few good
 * packets, then one packet that breaks a rule the broker must enforce by
 * closing the connection [MQTT-4.8.0-1] — missing or zero packet ids, wrong
 * fixed lengths, fields cut short, remaining lengths over the limit or over
 * four bytes, ill-formed UTF-8, U+0000, wildcards or nothing in a PUBLISH
 * topic, reserved or server-only packet types, wrong header flags, SUBSCRIBE
 * and UNSUBSCRIBE without filters, a second CONNECT — or a bad first packet.
 * Those cases say `brokerMustClose`. The others end with random bytes or a
 * good packet with bytes flipped: nothing can be promised about those except
 * that the broker survives them, so the client half-closes and the broker
 * must then close too. Each case's bytes are cut into one to four writes.
 *
 * Frames are built byte by byte here (not with mqtt-packet) so that a bad
 * one is exactly as bad as it says.
 */
import fc from 'fast-check';

export interface MqttFuzzCase {
  /** What the case ends with, e.g. 'bad:publish-wildcard-topic' or 'random-tail'. */
  readonly name: string;
  /** The bytes, as the writes that carry them. */
  readonly writes: readonly Buffer[];
  /** Packets in the case (random bytes count as one). */
  readonly frames: number;
  /** True when the last packet breaks a rule: the broker must close without any help. */
  readonly brokerMustClose: boolean;
}

export interface MqttFuzzOptions {
  /** The broker's packetBytesMax: an "oversized" frame announces more than this. */
  readonly packetBytesMax: number;
  /** Good packets between the CONNECT and the ending: at least, at most. More per connection make a cheaper frame. */
  readonly goodFramesMin: number;
  readonly goodFramesMax: number;
}

// ─────────────────────────── bytes ───────────────────────────

function remainingLengthBytes(length: number): Buffer {
  const bytes: number[] = [];
  let rest = length;
  do {
    let byte = rest % 128;
    rest = Math.floor(rest / 128);
    if (rest > 0) byte |= 0x80;
    bytes.push(byte);
  } while (rest > 0);
  return Buffer.from(bytes);
}

/** A whole packet: first byte, the remaining length of `body`, `body`. */
function packet(firstByte: number, ...body: Uint8Array[]): Buffer {
  const content = Buffer.concat(body);
  return Buffer.concat([Buffer.from([firstByte]), remainingLengthBytes(content.length), content]);
}

const u16 = (value: number): Buffer => Buffer.from([(value >> 8) & 0xff, value & 0xff]);
/** An MQTT string or binary field: two-byte length, then the bytes [MQTT-1.5.3]. */
const field = (bytes: Uint8Array): Buffer => Buffer.concat([u16(bytes.length), bytes]);
const utf8 = (text: string): Buffer => Buffer.from(text, 'utf8');

const packetType = { connect: 1, publish: 3, puback: 4, pubrec: 5, pubrel: 6, pubcomp: 7, subscribe: 8, unsubscribe: 10, pingreq: 12, disconnect: 14 } as const;
/** The fixed header flags 3.1.1 requires for each type but PUBLISH [MQTT-2.2.2-1]. */
const requiredFlags: Readonly<Record<number, number>> = { 1: 0, 4: 0, 5: 0, 6: 2, 7: 0, 8: 2, 10: 2, 12: 0, 14: 0 };
const first = (type: number): number => (type << 4) | (requiredFlags[type] ?? 0);

interface ConnectFields {
  readonly clientId: Uint8Array;
  readonly clean: boolean;
  readonly protocolName?: string;
  readonly level?: number;
  /** Overrides the flags byte computed from the fields. */
  readonly flags?: number;
  readonly username?: Uint8Array;
  readonly password?: Uint8Array;
  readonly trailing?: Uint8Array;
}

function connectPacket(fields: ConnectFields): Buffer {
  const flags =
    fields.flags ?? ((fields.clean ? 0x02 : 0) | (fields.username !== undefined ? 0x80 : 0) | (fields.password !== undefined ? 0x40 : 0));
  return packet(
    first(packetType.connect),
    field(utf8(fields.protocolName ?? 'MQTT')),
    Buffer.from([fields.level ?? 4, flags]),
    u16(30),
    field(fields.clientId),
    fields.username !== undefined ? field(fields.username) : Buffer.alloc(0),
    fields.password !== undefined ? field(fields.password) : Buffer.alloc(0),
    fields.trailing ?? Buffer.alloc(0),
  );
}

// ─────────────────────────── good packets ───────────────────────────

const packetId = fc.integer({ min: 1, max: 0xffff });
const level = fc.constantFrom('a', 'b', 'c', 'dé', '日本', 'ü/ü', '$x', ' ', '');
const topicName = fc.array(level, { minLength: 1, maxLength: 3 }).map((levels) => `fuzz/${levels.join('/')}`);
/** Valid filters, and invalid ones: an invalid filter is refused in its SUBACK slot (0x80), not by a close. */
const topicFilter = fc.oneof(
  fc.tuple(fc.array(fc.oneof(level, fc.constant('+')), { maxLength: 3 }), fc.boolean()).map(([levels, hash]) => ['fuzz', ...levels, ...(hash ? ['#'] : [])].join('/')),
  fc.constantFrom('fuzz/a#', 'fuzz/+x', 'fuzz/#/a'),
);
const qos = fc.constantFrom(0, 1, 2);
const payload = fc.uint8Array({ maxLength: 48 });

const goodPublish = fc
  .record({ qos, retain: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, fc.constant(true)), dup: fc.boolean(), topic: topicName, payload, id: packetId })
  .map(({ qos: level, retain, dup, topic, payload: body, id }) => {
    const firstByte = (packetType.publish << 4) | (level > 0 && dup ? 0x08 : 0) | (level << 1) | (retain ? 0x01 : 0);
    return packet(firstByte, field(utf8(topic)), level > 0 ? u16(id) : Buffer.alloc(0), body);
  });

const ackTypes = fc.constantFrom(packetType.puback, packetType.pubrec, packetType.pubrel, packetType.pubcomp);
const goodAck = fc.tuple(ackTypes, packetId).map(([type, id]) => packet(first(type), u16(id)));

const subscriptions = fc.array(fc.tuple(topicFilter, qos), { minLength: 1, maxLength: 3 });
const goodSubscribe = fc
  .tuple(packetId, subscriptions)
  .map(([id, list]) => packet(first(packetType.subscribe), u16(id), ...list.map(([filter, level]) => Buffer.concat([field(utf8(filter)), Buffer.from([level])]))));
const goodUnsubscribe = fc
  .tuple(packetId, fc.array(topicFilter, { minLength: 1, maxLength: 3 }))
  .map(([id, filters]) => packet(first(packetType.unsubscribe), u16(id), ...filters.map((filter) => field(utf8(filter)))));
const pingreq = fc.constant(packet(first(packetType.pingreq)));

/** Packets a connected client may send; none of them closes the connection. */
export const goodPacket: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 4, arbitrary: goodPublish },
  { weight: 2, arbitrary: goodAck },
  { weight: 1, arbitrary: goodSubscribe },
  { weight: 1, arbitrary: goodUnsubscribe },
  { weight: 1, arbitrary: pingreq },
);

/** A few persistent client ids are shared between cases, so sessions are resumed and taken over too. */
const clientId = fc.oneof(
  fc.integer({ min: 0, max: 3 }).map((index) => ({ id: `fuzz-persistent-${index}`, clean: false })),
  { weight: 6, arbitrary: fc.string({ minLength: 1, maxLength: 16 }).map((id) => ({ id: `fuzz-${id}`, clean: true })) },
);
const goodConnect = clientId.map(({ id, clean }) => connectPacket({ clientId: utf8(id), clean }));

// ─────────────────────────── bad packets ───────────────────────────

/** Byte sequences that are not UTF-8: bad lead bytes, overlong, surrogate, above U+10FFFF, lone continuation, cut short. */
const illFormedUtf8 = fc.constantFrom([0xff], [0xfe], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x80], [0xe2, 0x82]).map((bytes) => Buffer.from(bytes));
/** A string field holding `bad` somewhere inside good text. */
const stringWith = (bad: fc.Arbitrary<Buffer>): fc.Arbitrary<Buffer> =>
  fc.tuple(fc.constantFrom('fuzz/', 'a', ''), bad, fc.constantFrom('', 'x', '/b')).map(([before, middle, after]) => Buffer.concat([utf8(before), middle, utf8(after)]));

type Named = readonly [string, fc.Arbitrary<Buffer>];

const idPackets = fc.constantFrom(packetType.puback, packetType.pubrec, packetType.pubrel, packetType.pubcomp, packetType.subscribe, packetType.unsubscribe);

const badAfterConnect = (options: MqttFuzzOptions): readonly Named[] => [
  ['publish-without-packet-id', fc.tuple(fc.constantFrom(1, 2), topicName, fc.constantFrom(0, 1)).map(([level, topic, idBytes]) => packet((packetType.publish << 4) | (level << 1), field(utf8(topic)), Buffer.alloc(idBytes)))],
  ['ack-without-packet-id', fc.tuple(idPackets, fc.constantFrom(0, 1)).map(([type, length]) => packet(first(type), Buffer.alloc(length)))],
  ['packet-id-zero', fc.tuple(fc.constantFrom(packetType.puback, packetType.pubrec, packetType.pubrel, packetType.pubcomp, packetType.publish), topicName).map(([type, topic]) =>
    type === packetType.publish ? packet((type << 4) | 0x02, field(utf8(topic)), u16(0)) : packet(first(type), u16(0)))],
  ['subscribe-packet-id-zero', topicFilter.map((filter) => packet(first(packetType.subscribe), u16(0), field(utf8(filter)), Buffer.from([1])))],
  ['ack-wrong-length', fc.tuple(fc.constantFrom(packetType.puback, packetType.pubrec, packetType.pubrel, packetType.pubcomp), packetId, fc.uint8Array({ minLength: 1, maxLength: 8 })).map(([type, id, extra]) => packet(first(type), u16(id), extra))],
  ['empty-packet-with-body', fc.tuple(fc.constantFrom(packetType.pingreq, packetType.disconnect), fc.uint8Array({ minLength: 1, maxLength: 8 })).map(([type, body]) => packet(first(type), body))],
  ['publish-topic-longer-than-packet', fc.tuple(topicName, fc.integer({ min: 1, max: 200 })).map(([topic, over]) => packet(packetType.publish << 4, u16(Buffer.byteLength(topic) + over), utf8(topic)))],
  ['subscribe-cut-short', fc.tuple(packetId, topicFilter, fc.boolean()).map(([id, filter, cutInString]) =>
    packet(first(packetType.subscribe), u16(id), cutInString ? Buffer.concat([u16(Buffer.byteLength(filter) + 3), utf8(filter)]) : field(utf8(filter))))],
  ['unsubscribe-cut-short', fc.tuple(packetId, topicFilter).map(([id, filter]) => packet(first(packetType.unsubscribe), u16(id), u16(Buffer.byteLength(filter) + 1), utf8(filter)))],
  ['remaining-length-over-limit', fc.tuple(fc.integer({ min: options.packetBytesMax, max: 268_435_455 }), fc.uint8Array({ maxLength: 16 })).map(([length, body]) =>
    Buffer.concat([Buffer.from([packetType.publish << 4]), remainingLengthBytes(length), body]))],
  ['remaining-length-five-bytes', fc.constant(Buffer.from([packetType.publish << 4, 0xff, 0xff, 0xff, 0xff, 0x01]))],
  ['publish-ill-formed-utf8', fc.tuple(stringWith(illFormedUtf8), packetId).map(([topic, id]) => packet((packetType.publish << 4) | 0x02, field(topic), u16(id)))],
  ['subscribe-ill-formed-utf8', fc.tuple(packetId, stringWith(illFormedUtf8)).map(([id, filter]) => packet(first(packetType.subscribe), u16(id), field(filter), Buffer.from([0])))],
  ['unsubscribe-ill-formed-utf8', fc.tuple(packetId, stringWith(illFormedUtf8)).map(([id, filter]) => packet(first(packetType.unsubscribe), u16(id), field(filter)))],
  ['null-character', fc.tuple(fc.boolean(), stringWith(fc.constant(Buffer.from([0])))).map(([publish, text]) =>
    publish ? packet(packetType.publish << 4, field(text)) : packet(first(packetType.subscribe), u16(1), field(text), Buffer.from([0])))],
  ['publish-wildcard-topic', fc.tuple(stringWith(fc.constantFrom(utf8('+'), utf8('#'))), qos, packetId).map(([topic, level, id]) =>
    packet((packetType.publish << 4) | (level << 1), field(topic), level > 0 ? u16(id) : Buffer.alloc(0)))],
  ['publish-empty-topic', payload.map((body) => packet(packetType.publish << 4, field(Buffer.alloc(0)), body))],
  ['reserved-or-server-packet-type', fc.tuple(fc.constantFrom(0, 2, 9, 11, 13, 15), fc.integer({ min: 0, max: 15 }), fc.uint8Array({ maxLength: 4 })).map(([type, flags, body]) => packet((type << 4) | flags, body))],
  ['wrong-header-flags', fc.tuple(fc.constantFrom(packetType.puback, packetType.pubrel, packetType.subscribe, packetType.unsubscribe, packetType.pingreq, packetType.disconnect), fc.integer({ min: 0, max: 15 }), packetId).filter(([type, flags]) => flags !== requiredFlags[type]).map(([type, flags, id]) =>
    packet((type << 4) | flags, type === packetType.pingreq || type === packetType.disconnect ? Buffer.alloc(0) : u16(id)))],
  ['publish-qos-3', fc.tuple(topicName, packetId).map(([topic, id]) => packet((packetType.publish << 4) | 0x06, field(utf8(topic)), u16(id)))],
  ['publish-qos-0-dup', topicName.map((topic) => packet((packetType.publish << 4) | 0x08, field(utf8(topic))))],
  ['subscribe-unsubscribe-without-filters', fc.tuple(fc.constantFrom(packetType.subscribe, packetType.unsubscribe), packetId).map(([type, id]) => packet(first(type), u16(id)))],
  ['subscribe-bad-requested-qos', fc.tuple(packetId, topicFilter, fc.integer({ min: 3, max: 255 })).map(([id, filter, options]) => packet(first(packetType.subscribe), u16(id), field(utf8(filter)), Buffer.from([options])))],
  ['second-connect', goodConnect],
];

const badFirstPacket: readonly Named[] = [
  ['first-packet-not-connect', goodPacket],
  ['connect-ill-formed-utf8-client-id', fc.tuple(stringWith(illFormedUtf8), fc.boolean()).map(([id, clean]) => connectPacket({ clientId: id, clean }))],
  ['connect-ill-formed-utf8-user-name', stringWith(illFormedUtf8).map((username) => connectPacket({ clientId: utf8('fuzz-user'), clean: true, username }))],
  ['connect-unknown-protocol', fc.tuple(fc.constantFrom('MQTX', 'MQIsdp', '', 'mqtt'), fc.integer({ min: 0, max: 255 })).map(([protocolName, level]) => connectPacket({ clientId: utf8('fuzz-p'), clean: true, protocolName, level }))],
  ['connect-unsupported-level', fc.integer({ min: 0, max: 255 }).filter((level) => level !== 4).map((level) => connectPacket({ clientId: utf8('fuzz-l'), clean: true, level }))],
  ['connect-reserved-flag', fc.constant(connectPacket({ clientId: utf8('fuzz-r'), clean: true, flags: 0x03 }))],
  ['connect-will-qos-without-will', fc.constantFrom(0x0a, 0x12, 0x22).map((flags) => connectPacket({ clientId: utf8('fuzz-w'), clean: true, flags }))],
  ['connect-password-without-user-name', fc.constant(connectPacket({ clientId: utf8('fuzz-pw'), clean: true, flags: 0x42, password: utf8('secret') }))],
  ['connect-bytes-after-last-field', fc.uint8Array({ minLength: 1, maxLength: 8 }).map((trailing) => connectPacket({ clientId: utf8('fuzz-t'), clean: true, trailing }))],
  ['connect-persistent-without-client-id', fc.constant(connectPacket({ clientId: Buffer.alloc(0), clean: false }))],
  ['connect-longer-than-limit', fc.constant(Buffer.from([0x10, 0xff, 0xff, 0xff, 0x7f]))],
];

function namedOneOf(prefix: string, named: readonly Named[]): fc.Arbitrary<{ name: string; bytes: Buffer }> {
  return fc.oneof(...named.map(([name, arbitrary]) => arbitrary.map((bytes) => ({ name: `${prefix}${name}`, bytes }))));
}

// ─────────────────────────── cases ───────────────────────────

/** A case as fast-check prints a counterexample: its name and each write in hex. */
function withDescription(fuzzCase: MqttFuzzCase): MqttFuzzCase {
  const described = fuzzCase.writes.map((bytes) => bytes.toString('hex')).join(' | ');
  return Object.assign(fuzzCase, { [fc.toStringMethod]: () => `${fuzzCase.name}${fuzzCase.brokerMustClose ? '' : ' (then FIN)'}: ${described}` });
}

/** Cut `bytes` into writes at the given points (any points: inside headers too). */
function cut(bytes: Buffer, points: readonly number[]): Buffer[] {
  const sorted = [...new Set(points.map((point) => point % (bytes.length + 1)))].filter((point) => point > 0 && point < bytes.length).sort((a, b) => a - b);
  const writes: Buffer[] = [];
  let start = 0;
  for (const point of sorted) {
    writes.push(bytes.subarray(start, point));
    start = point;
  }
  writes.push(bytes.subarray(start));
  return writes;
}

const cutPoints = fc.array(fc.nat(), { maxLength: 3 });

function afterConnect(options: MqttFuzzOptions, ending: fc.Arbitrary<{ name: string; bytes: Buffer }>, brokerMustClose: boolean): fc.Arbitrary<MqttFuzzCase> {
  return fc
    .record({ connect: goodConnect, good: fc.array(goodPacket, { minLength: options.goodFramesMin, maxLength: options.goodFramesMax }), ending, garbage: fc.option(fc.uint8Array({ minLength: 1, maxLength: 16 }), { freq: 4 }), cuts: cutPoints })
    .map(({ connect, good, ending: last, garbage, cuts }) =>
      withDescription({
        name: last.name,
        // Bytes after a bad packet must never be looked at; after a random ending they are just more random bytes.
        writes: cut(Buffer.concat([connect, ...good, last.bytes, garbage ?? Buffer.alloc(0)]), cuts),
        frames: 2 + good.length,
        brokerMustClose,
      }),
    );
}

/** A good packet with one to three bytes changed: it may still be good, or any kind of bad. */
const mutatedPacket = fc.tuple(goodPacket, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 3 })).map(([bytes, flips]) => {
  const mutated = Buffer.from(bytes);
  for (const [index, mask] of flips) mutated[index % mutated.length] = (mutated[index % mutated.length] ?? 0) ^ mask;
  return { name: 'mutated-packet', bytes: mutated };
});

export function mqttFuzzCase(options: MqttFuzzOptions): fc.Arbitrary<MqttFuzzCase> {
  const badFirst = fc
    .tuple(namedOneOf('bad-first:', badFirstPacket), cutPoints)
    .map(([bad, cuts]) => withDescription({ name: bad.name, writes: cut(bad.bytes, cuts), frames: 1, brokerMustClose: true }));
  return fc.oneof(
    { weight: 8, arbitrary: afterConnect(options, namedOneOf('bad:', badAfterConnect(options)), true) },
    { weight: 2, arbitrary: badFirst },
    { weight: 1, arbitrary: afterConnect(options, fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => ({ name: 'random-tail', bytes: Buffer.from(bytes) })), false) },
    { weight: 1, arbitrary: afterConnect(options, mutatedPacket, false) },
  );
}

/** Built once per options: building the whole tree of arbitraries per case would cost more than the case. */
const arbitraries = new WeakMap<MqttFuzzOptions, fc.Arbitrary<MqttFuzzCase>>();

/** The case drawn from one seed, for the bench (each case replays from its own seed). */
export function mqttFuzzCaseFromSeed(options: MqttFuzzOptions, seed: number): MqttFuzzCase {
  let arbitrary = arbitraries.get(options);
  if (arbitrary === undefined) arbitraries.set(options, (arbitrary = mqttFuzzCase(options)));
  const [drawn] = fc.sample(arbitrary, { seed, numRuns: 1 });
  if (drawn === undefined) throw new Error(`fast-check drew no case from seed ${seed}`);
  return drawn;
}
