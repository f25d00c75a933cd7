/**
 * The properties of an MQTT 5 PUBLISH, read and written directly: they come
 * with every v5 message, and mqtt-packet's general parser and generate() cost
 * several times what the rest of the packet does (17 µs to decode and 11 µs
 * to encode two user properties, against 1.3 and 2.8 µs for the packet
 * without them). Only what a PUBLISH commonly carries is handled here, each
 * property once (user properties any number of times); anything else — an
 * unknown or repeated property, a length that runs past the end — is left to
 * mqtt-packet (`undefined`), so errors and their reasons stay its own and the
 * property rules (v5-property-rules.ts) still see repeats.
 *
 *   <properties length: variable byte integer> { <id> <value> }…
 *   0x01 payload format indicator  byte      0x02 message expiry interval  u32
 *   0x03 content type              string    0x08 response topic           string
 *   0x09 correlation data          binary    0x23 topic alias              u16
 *   0x26 user property             string pair (repeatable, kept in order)
 *   0x0B subscription identifier   variable byte integer (server → client only; repeatable)
 *
 * The decoded object has mqtt-packet's shape (a repeated user property name
 * gives an array of values), so the two decoders stay interchangeable.
 */
import type { IPublishPacket } from 'mqtt-packet';
import { utf8Length, writeUtf8 } from '../../utf8-bytes.js';

export type PublishPacketProperties = NonNullable<IPublishPacket['properties']>;

const PropertyId = {
  payloadFormatIndicator: 0x01,
  messageExpiryInterval: 0x02,
  contentType: 0x03,
  responseTopic: 0x08,
  correlationData: 0x09,
  subscriptionIdentifier: 0x0b,
  topicAlias: 0x23,
  userProperty: 0x26,
} as const;

type Writable<T> = { -readonly [K in keyof T]: T[K] };

/** A variable byte integer at `offset`: its value and the offset after it, or undefined when it is cut or too long. */
function readVariableInteger(bytes: Buffer, offset: number): { value: number; end: number } | undefined {
  let value = 0;
  for (let i = 0; i < 4; i++) {
    const byte = bytes[offset + i];
    if (byte === undefined) return undefined;
    value += (byte & 0x7f) * 128 ** i;
    if ((byte & 0x80) === 0) return { value, end: offset + i + 1 };
  }
  return undefined;
}

/**
 * The properties of a v5 PUBLISH that start at `offset` and where the payload starts after them;
 * undefined when mqtt-packet should decode the packet instead. `properties` is undefined for none.
 */
export function decodePublishProperties(bytes: Buffer, offset: number): { properties: PublishPacketProperties | undefined; end: number } | undefined {
  const length = readVariableInteger(bytes, offset);
  if (length === undefined) return undefined;
  const end = length.end + length.value;
  if (end > bytes.length) return undefined;
  if (length.value === 0) return { properties: undefined, end };
  const properties: Writable<PublishPacketProperties> = {};
  let userProperties: Record<string, string | string[]> | undefined;
  let at = length.end;
  const u16 = (): number | undefined => (at + 2 <= end ? bytes.readUInt16BE((at += 2) - 2) : undefined);
  const string = (): string | undefined => {
    const size = u16();
    if (size === undefined || at + size > end) return undefined;
    at += size;
    return bytes.toString('utf8', at - size, at);
  };
  while (at < end) {
    const id = bytes[at++]!;
    switch (id) {
      case PropertyId.userProperty: {
        const name = string();
        const value = string();
        if (name === undefined || value === undefined) return undefined;
        userProperties ??= Object.create(null) as Record<string, string | string[]>;
        const existing = userProperties[name];
        userProperties[name] = existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
        continue;
      }
      case PropertyId.payloadFormatIndicator:
        if (properties.payloadFormatIndicator !== undefined || at + 1 > end) return undefined;
        properties.payloadFormatIndicator = bytes[at++] !== 0;
        continue;
      case PropertyId.messageExpiryInterval:
        if (properties.messageExpiryInterval !== undefined || at + 4 > end) return undefined;
        properties.messageExpiryInterval = bytes.readUInt32BE(at);
        at += 4;
        continue;
      case PropertyId.contentType:
      case PropertyId.responseTopic: {
        const key = id === PropertyId.contentType ? 'contentType' : 'responseTopic';
        const text = properties[key] === undefined ? string() : undefined;
        if (text === undefined) return undefined;
        properties[key] = text;
        continue;
      }
      case PropertyId.correlationData: {
        const size = properties.correlationData === undefined ? u16() : undefined;
        if (size === undefined || at + size > end) return undefined;
        properties.correlationData = bytes.subarray(at, at + size);
        at += size;
        continue;
      }
      case PropertyId.topicAlias: {
        const alias = properties.topicAlias === undefined ? u16() : undefined;
        if (alias === undefined) return undefined;
        properties.topicAlias = alias;
        continue;
      }
      default:
        return undefined;
    }
  }
  if (userProperties !== undefined) properties.userProperties = userProperties;
  return { properties, end };
}

/** How many bytes a variable byte integer takes (values below 2^28). */
export function variableIntegerSize(value: number): number {
  return value < 128 ? 1 : value < 16_384 ? 2 : value < 2_097_152 ? 3 : 4;
}

/** Writes a variable byte integer at `at`; returns the offset after it. */
export function writeVariableInteger(out: Buffer, at: number, value: number): number {
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    out[at++] = byte;
  } while (value > 0);
  return at;
}

/** A property as the writer lays it out: its id and value, and the bytes it takes (id included). */
type PropertyItem =
  | { readonly id: number; readonly kind: 'byte' | 'u16' | 'u32' | 'variable'; readonly value: number; readonly size: number }
  | { readonly id: number; readonly kind: 'text'; readonly value: string; readonly size: number }
  | { readonly id: number; readonly kind: 'binary'; readonly value: Uint8Array; readonly size: number }
  | { readonly id: number; readonly kind: 'pair'; readonly value: readonly [string, string]; readonly size: number };

function itemsOf(properties: PublishPacketProperties): PropertyItem[] | undefined {
  const items: PropertyItem[] = [];
  const text = (id: number, value: string): PropertyItem => ({ id, kind: 'text', value, size: 3 + utf8Length(value) });
  for (const key in properties) {
    const value = (properties as Record<string, unknown>)[key];
    if (value === undefined) continue;
    switch (key) {
      case 'payloadFormatIndicator': items.push({ id: PropertyId.payloadFormatIndicator, kind: 'byte', value: value === true ? 1 : 0, size: 2 }); break;
      case 'messageExpiryInterval': items.push({ id: PropertyId.messageExpiryInterval, kind: 'u32', value: value as number, size: 5 }); break;
      case 'contentType': items.push(text(PropertyId.contentType, value as string)); break;
      case 'responseTopic': items.push(text(PropertyId.responseTopic, value as string)); break;
      case 'correlationData': items.push({ id: PropertyId.correlationData, kind: 'binary', value: value as Uint8Array, size: 3 + (value as Uint8Array).length }); break;
      case 'topicAlias': items.push({ id: PropertyId.topicAlias, kind: 'u16', value: value as number, size: 3 }); break;
      case 'subscriptionIdentifier':
        for (const one of Array.isArray(value) ? (value as number[]) : [value as number]) items.push({ id: PropertyId.subscriptionIdentifier, kind: 'variable', value: one, size: 1 + variableIntegerSize(one) });
        break;
      case 'userProperties':
        for (const name in value as Record<string, string | string[]>) {
          const values = (value as Record<string, string | string[]>)[name]!;
          for (const one of Array.isArray(values) ? values : [values]) {
            const pair = [name, String(one)] as const;
            items.push({ id: PropertyId.userProperty, kind: 'pair', value: pair, size: 5 + utf8Length(pair[0]) + utf8Length(pair[1]) });
          }
        }
        break;
      default:
        return undefined;
    }
  }
  return items;
}

/**
 * The encoded properties block (its length first) of an outgoing v5 PUBLISH, or undefined for a
 * property this writer does not know (then mqtt-packet's generate() writes the packet).
 */
export function encodePublishProperties(properties: PublishPacketProperties | undefined): Buffer | undefined {
  if (properties === undefined) return emptyProperties;
  const items = itemsOf(properties);
  if (items === undefined) return undefined;
  let length = 0;
  for (const item of items) length += item.size;
  const out = Buffer.allocUnsafe(variableIntegerSize(length) + length);
  let at = writeVariableInteger(out, 0, length);
  const writeText = (value: string): void => {
    const size = writeUtf8(out, at + 2, value);
    out.writeUInt16BE(size, at);
    at += 2 + size;
  };
  for (const item of items) {
    out[at++] = item.id;
    switch (item.kind) {
      case 'byte': out[at++] = item.value; break;
      case 'u16': at = out.writeUInt16BE(item.value, at); break;
      case 'u32': at = out.writeUInt32BE(item.value, at); break;
      case 'variable': at = writeVariableInteger(out, at, item.value); break;
      case 'text': writeText(item.value); break;
      case 'binary': at = out.writeUInt16BE(item.value.length, at); out.set(item.value, at); at += item.value.length; break;
      case 'pair': writeText(item.value[0]); writeText(item.value[1]); break;
    }
  }
  return out;
}

const emptyProperties = Buffer.from([0]);
