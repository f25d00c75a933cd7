/**
 * The UTF-8 strings inside an MQTT 5 properties field, checked on the wire
 * bytes: an ill-formed one makes the packet malformed [MQTT-1.5.4-1], and so
 * does U+0000 [MQTT-1.5.4-2]. mqtt-packet decodes them with the usual
 * replacement of bad sequences by U+FFFD, so string-fields.ts walks the
 * properties here only when a decoded property string is suspect.
 *
 *   properties  <length: variable byte integer> (<identifier: 1> <value>)*
 *
 * A value's layout follows from its identifier (MQTT 5.0 table 2-4): a byte,
 * a two- or four-byte integer, a variable byte integer, a UTF-8 string, a
 * string pair (user property), or binary data; strings and binary data are a
 * two-byte length and that many bytes.
 */
import { isUtf8 } from 'node:buffer';

type ValueLayout = 'byte' | 'int16' | 'int32' | 'varint' | 'string' | 'pair' | 'binary';

const layoutOf: ReadonlyMap<number, ValueLayout> = new Map<number, ValueLayout>([
  [0x01, 'byte'], [0x02, 'int32'], [0x03, 'string'], [0x08, 'string'], [0x09, 'binary'], [0x0b, 'varint'],
  [0x11, 'int32'], [0x12, 'string'], [0x13, 'int16'], [0x15, 'string'], [0x16, 'binary'], [0x17, 'byte'],
  [0x18, 'int32'], [0x19, 'byte'], [0x1a, 'string'], [0x1c, 'string'], [0x1f, 'string'], [0x21, 'int16'],
  [0x22, 'int16'], [0x23, 'int16'], [0x24, 'byte'], [0x25, 'byte'], [0x26, 'pair'], [0x27, 'int32'],
  [0x28, 'byte'], [0x29, 'byte'], [0x2a, 'byte'],
]);

const fixedBytes: Readonly<Record<'byte' | 'int16' | 'int32', number>> = { byte: 1, int16: 2, int32: 4 };

/** A variable byte integer at `position`: its value and where it ends, or undefined past `end` or beyond 4 bytes. */
export function readVariableByteInteger(bytes: Buffer, position: number, end: number): { value: number; next: number } | undefined {
  let value = 0;
  for (let index = 0, multiplier = 1; index < 4 && position + index < end; index++, multiplier *= 128) {
    const byte = bytes[position + index]!;
    value += (byte & 0x7f) * multiplier;
    if ((byte & 0x80) === 0) return { value, next: position + index + 1 };
  }
  return undefined;
}

/**
 * The properties field at `position` of `bytes` (one whole packet): where it ends, or what is
 * wrong with it (it runs past the packet, a string is not well-formed UTF-8 or holds U+0000).
 */
export function checkPropertyStrings(bytes: Buffer, position: number): { next: number } | { problem: string } {
  const length = readVariableByteInteger(bytes, position, bytes.length);
  if (length === undefined || length.next + length.value > bytes.length) return { problem: 'properties run past the end of the packet' };
  const end = length.next + length.value;
  let at = length.next;
  while (at < end) {
    const identifier = bytes[at]!;
    const layout = layoutOf.get(identifier);
    if (layout === undefined) return { problem: `unknown property identifier 0x${identifier.toString(16)}` };
    at += 1;
    if (layout === 'varint') {
      const value = readVariableByteInteger(bytes, at, end);
      if (value === undefined) return { problem: 'a property value runs past its properties' };
      at = value.next;
      continue;
    }
    if (layout === 'byte' || layout === 'int16' || layout === 'int32') {
      at += fixedBytes[layout];
      continue;
    }
    for (let strings = layout === 'pair' ? 2 : 1; strings > 0; strings--) {
      if (at + 2 > end || at + 2 + bytes.readUInt16BE(at) > end) return { problem: 'a property value runs past its properties' };
      const field = bytes.subarray(at + 2, at + 2 + bytes.readUInt16BE(at));
      at += 2 + field.length;
      if (layout === 'binary') continue;
      if (!isUtf8(field)) return { problem: `property 0x${identifier.toString(16)} is not well-formed UTF-8 [MQTT-1.5.4-1]` };
      if (field.includes(0)) return { problem: `property 0x${identifier.toString(16)} contains U+0000 [MQTT-1.5.4-2]` };
    }
  }
  return at === end ? { next: end } : { problem: 'a property value runs past its properties' };
}
