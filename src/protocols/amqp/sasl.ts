/**
 * The two SASL mechanisms a connection.start-ok may use, parsed into a user
 * name and password (the password stays bytes: it goes to scrypt as sent).
 *
 *   PLAIN     [authzid] NUL authcid NUL passwd          (RFC 4616)
 *   AMQPLAIN  a field table without its length prefix:  LOGIN (S), PASSWORD (S)
 *
 * A response that does not parse is a refused login (403), not a protocol
 * error: a client with a broken SASL library should read why it was refused.
 */
import { decodeFieldTable, type FieldValue } from './codec/index.js';
import { AmqpConnectionError } from './errors.js';
import type { SaslMechanism } from './server-properties.js';
import { saslMechanisms } from './server-properties.js';

export interface Credentials {
  readonly username: string | undefined;
  readonly password: Uint8Array | undefined;
}

export function isSaslMechanism(name: string): name is SaslMechanism {
  return (saslMechanisms as readonly string[]).includes(name);
}

export function parseSaslResponse(mechanism: SaslMechanism, response: Buffer): Credentials {
  return mechanism === 'PLAIN' ? parsePlain(response) : parseAmqplain(response);
}

function parsePlain(response: Buffer): Credentials {
  const first = response.indexOf(0);
  const second = first < 0 ? -1 : response.indexOf(0, first + 1);
  if (second < 0) throw refused('PLAIN', 'the response is not [authzid] NUL user NUL password');
  return { username: response.subarray(first + 1, second).toString('utf8'), password: response.subarray(second + 1) };
}

function parseAmqplain(response: Buffer): Credentials {
  const prefixed = Buffer.allocUnsafe(4 + response.length);
  prefixed.writeUInt32BE(response.length, 0);
  response.copy(prefixed, 4);
  let table;
  try {
    table = decodeFieldTable(prefixed);
  } catch {
    throw refused('AMQPLAIN', 'the response is not a field table');
  }
  return { username: textOf(table['LOGIN']), password: bytesOf(table['PASSWORD']) };
}

function textOf(field: FieldValue | undefined): string | undefined {
  if (field?.type !== 'S') return undefined;
  return typeof field.value === 'string' ? field.value : field.value.toString('utf8');
}

function bytesOf(field: FieldValue | undefined): Uint8Array | undefined {
  if (field?.type !== 'S') return undefined;
  return typeof field.value === 'string' ? Buffer.from(field.value, 'utf8') : field.value;
}

function refused(mechanism: SaslMechanism, why: string): AmqpConnectionError {
  return new AmqpConnectionError(403, `Login was refused using authentication mechanism ${mechanism}: ${why}`);
}
