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
 * CONNECT's keep alive and before its will topic, and after the packet id of
 * SUBSCRIBE and UNSUBSCRIBE; they are skipped here (the strings inside them
 * are not walked).
 *
 * CONNECT is always walked to its end (once per connection): bytes after its
 * last field make it malformed too, as Mosquitto and nats-server also judge.
 */
import { isUtf8 } from 'node:buffer';
import { readFixedHeader } from './framer.js';

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

  /** Skips an MQTT 5 properties field [MQTT-2.2.2.1]; false when it runs past the end. */
  skipProperties(): boolean {
    let length = 0;
    for (let index = 0, multiplier = 1; index < 4; index++, multiplier *= 128) {
      const byte = this.bytes[this.position];
      if (byte === undefined) return false;
      this.position += 1;
      length += (byte & 0x7f) * multiplier;
      if ((byte & 0x80) === 0) return this.skip(length);
    }
    return false;
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
      return wellFormed(cursor.lengthPrefixed(), 'PUBLISH topic name');
    case 8:
      return filtersProblem(cursor, 'SUBSCRIBE', 1, v5);
    case 10:
      return filtersProblem(cursor, 'UNSUBSCRIBE', 0, v5);
    default:
      return undefined; // no strings
  }
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
  if (v5 && !cursor.skipProperties()) return `${packet} properties run past the end of the packet`;
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
  if (v5 && !cursor.skipProperties()) return 'CONNECT properties run past the end of the packet';
  const has = (flag: number): boolean => (flags & flag) !== 0;
  const willPropertiesProblem = (): string | undefined => (v5 && !cursor.skipProperties() ? 'CONNECT will properties run past the end of the packet' : undefined);
  return (
    wellFormed(cursor.lengthPrefixed(), 'CONNECT client identifier') ??
    (has(willFlag) ? (willPropertiesProblem() ?? wellFormed(cursor.lengthPrefixed(), 'CONNECT will topic') ?? present(cursor.lengthPrefixed(), 'CONNECT will message')) : undefined) ??
    (has(userNameFlag) ? wellFormed(cursor.lengthPrefixed(), 'CONNECT user name') : undefined) ??
    (has(passwordFlag) ? present(cursor.lengthPrefixed(), 'CONNECT password') : undefined) ??
    (cursor.atEnd ? undefined : 'CONNECT has bytes after its last field [MQTT-3.1.3]')
  );
}
