/**
 * The UTF-8 strings of a client packet, found on the wire: a receiver must
 * close the connection on an ill-formed one [MQTT-1.5.3-1], and a decoded
 * JavaScript string cannot tell (the decoder has already turned each bad
 * sequence into U+FFFD, which is also a legal character). So when a decoded
 * string holds U+FFFD, client-packet-rules.ts asks this file to look at the
 * bytes themselves. Every string is a two-byte length and that many bytes
 * [MQTT-1.5.3]; where they are depends on the packet:
 *
 *   CONNECT      <protocol name> <level: 1> <flags: 1> <keep alive: 2> <client id>
 *                [<will topic> <will message: binary>] [<user name>] [<password: binary>]
 *   PUBLISH      <topic name> …
 *   SUBSCRIBE    <packet id: 2> (<topic filter> <requested QoS: 1>)+
 *   UNSUBSCRIBE  <packet id: 2> (<topic filter>)+
 *
 * MQTT 5 puts properties (a variable byte length, then that many bytes) after
 * CONNECT's keep alive and before its will topic, after the packet id of
 * PUBLISH (QoS > 0), SUBSCRIBE and UNSUBSCRIBE, and after the reason code of
 * the acknowledgements, DISCONNECT and AUTH; the strings inside them are
 * walked too (property-strings.ts):
 *
 *   PUBLISH      <topic name> [<packet id: 2>] <properties> …
 *   PUBACK…      <packet id: 2> [<reason code: 1> [<properties>]]
 *   DISCONNECT   [<reason code: 1> [<properties>]]     (AUTH alike)
 *
 * CONNECT is always walked to its end (once per connection): bytes after its
 * last field make it malformed too, as Mosquitto and nats-server also judge.
 */
import { isUtf8 } from 'node:buffer';
import { readFixedHeader } from './framer.js';
import { checkPropertyStrings } from './property-strings.js';

/** CONNECT flag bits [MQTT-3.1.2.3]. */
const willFlag = 0x04;
const passwordFlag = 0x40;
const userNameFlag = 0x80;

/** Reads length-prefixed fields from one whole packet; undefined once a field would run past its end. */
class FieldCursor {
  constructor(
    private readonly bytes: Buffer,
    private position: number,
  ) {}

  get atEnd(): boolean {
    return this.position === this.bytes.length;
  }

  lengthPrefixed(): Buffer | undefined {
    if (this.position + 2 > this.bytes.length) return undefined;
    const end = this.position + 2 + this.bytes.readUInt16BE(this.position);
    if (end > this.bytes.length) return undefined;
    const field = this.bytes.subarray(this.position + 2, end);
    this.position = end;
    return field;
  }

  /** Skips `count` bytes; false when fewer are left. */
  skip(count: number): boolean {
    if (this.position + count > this.bytes.length) return false;
    this.position += count;
    return true;
  }

  /** Reads an MQTT 5 properties field [MQTT-2.2.2.1], checking its strings; what is wrong with it, if anything. */
  properties(what: string): string | undefined {
    const checked = checkPropertyStrings(this.bytes, this.position);
    if ('problem' in checked) return `${what}: ${checked.problem}`;
    this.position = checked.next;
    return undefined;
  }

  byteAt(offset: number): number | undefined {
    return this.bytes[this.position + offset];
  }
}

/**
 * Undefined when every UTF-8 string of `bytes` (one whole client packet that
 * mqtt-packet decoded) is well-formed; otherwise what is wrong, with the rule.
 */
export function findStringFieldProblem(bytes: Buffer, v5: boolean): string | undefined {
  const header = readFixedHeader(bytes, 0);
  if (header.kind !== 'header') return 'fixed header unreadable';
  const cursor = new FieldCursor(bytes, header.headerBytes);
  switch ((bytes[0] ?? 0) >> 4) {
    case 1:
      return connectProblem(cursor, v5);
    case 3:
      return publishProblem(cursor, bytes[0] ?? 0, v5);
    case 4: case 5: case 6: case 7:
      return v5 ? afterReasonCode(cursor, 2, 'acknowledgement') : undefined;
    case 8:
      return filtersProblem(cursor, 'SUBSCRIBE', 1, v5);
    case 10:
      return filtersProblem(cursor, 'UNSUBSCRIBE', 0, v5);
    case 14: case 15:
      return v5 ? afterReasonCode(cursor, 0, 'DISCONNECT/AUTH') : undefined;
    default:
      return undefined; // no strings
  }
}

function publishProblem(cursor: FieldCursor, firstByte: number, v5: boolean): string | undefined {
  const topicProblem = wellFormed(cursor.lengthPrefixed(), 'PUBLISH topic name');
  if (topicProblem !== undefined || !v5) return topicProblem;
  const qos = (firstByte >> 1) & 0x03;
  if (qos > 0 && !cursor.skip(2)) return 'PUBLISH without a packet identifier';
  return cursor.properties('PUBLISH properties');
}

/** Fixed fields, then a reason code and properties, each present only if the packet goes on [MQTT-3.4.2.1]. */
function afterReasonCode(cursor: FieldCursor, fixedBytes: number, packet: string): string | undefined {
  if (!cursor.skip(fixedBytes)) return `${packet} cut short`;
  if (cursor.atEnd || !cursor.skip(1) || cursor.atEnd) return undefined;
  return cursor.properties(`${packet} properties`);
}

/** A binary field (will message, password): it only has to fit in the packet. */
function present(field: Buffer | undefined, what: string): string | undefined {
  return field === undefined ? `${what} runs past the end of the packet` : undefined;
}

function wellFormed(field: Buffer | undefined, what: string): string | undefined {
  return present(field, what) ?? (isUtf8(field as Buffer) ? undefined : `${what} is not well-formed UTF-8 [MQTT-1.5.3-1]`);
}

function filtersProblem(cursor: FieldCursor, packet: string, bytesAfterEach: number, v5: boolean): string | undefined {
  if (!cursor.skip(2)) return `${packet} without a packet identifier`;
  const propertiesProblem = v5 ? cursor.properties(`${packet} properties`) : undefined;
  if (propertiesProblem !== undefined) return propertiesProblem;
  while (!cursor.atEnd) {
    const problem = wellFormed(cursor.lengthPrefixed(), `${packet} topic filter`);
    if (problem !== undefined) return problem;
    if (!cursor.skip(bytesAfterEach)) return `${packet} topic filter without its requested QoS`;
  }
  return undefined;
}

function connectProblem(cursor: FieldCursor, v5: boolean): string | undefined {
  // Protocol name and level (checked by handlers/connect.ts), then the flags and the keep alive.
  if (cursor.lengthPrefixed() === undefined || !cursor.skip(1)) return 'CONNECT variable header cut short';
  const flags = cursor.byteAt(0) ?? 0;
  if (!cursor.skip(3)) return 'CONNECT variable header cut short';
  const propertiesProblem = v5 ? cursor.properties('CONNECT properties') : undefined;
  if (propertiesProblem !== undefined) return propertiesProblem;
  const has = (flag: number): boolean => (flags & flag) !== 0;
  const willPropertiesProblem = (): string | undefined => (v5 ? cursor.properties('CONNECT will properties') : undefined);
  return (
    wellFormed(cursor.lengthPrefixed(), 'CONNECT client identifier') ??
    (has(willFlag) ? (willPropertiesProblem() ?? wellFormed(cursor.lengthPrefixed(), 'CONNECT will topic') ?? present(cursor.lengthPrefixed(), 'CONNECT will message')) : undefined) ??
    (has(userNameFlag) ? wellFormed(cursor.lengthPrefixed(), 'CONNECT user name') : undefined) ??
    (has(passwordFlag) ? present(cursor.lengthPrefixed(), 'CONNECT password') : undefined) ??
    (cursor.atEnd ? undefined : 'CONNECT has bytes after its last field [MQTT-3.1.3]')
  );
}
