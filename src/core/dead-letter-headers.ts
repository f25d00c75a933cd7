/**
 * The properties of a dead-lettered message, as RabbitMQ writes them: the
 * original properties with the `x-death` header updated and `expiration`
 * removed (kept in the death as `original-expiration`, so the copy does not
 * expire again wherever it lands).
 *
 * x-death is an array of tables, most recent first, one per (queue, reason):
 *   { queue, reason, count, exchange, routing-keys, time [, original-expiration] }
 * A second death in the same queue for the same reason adds one to that
 * table's count and moves it to the front; its other fields stay. The
 * x-first-death-{queue,reason,exchange} headers are set once, on the first
 * death; x-last-death-* (RabbitMQ 3.13) on every death.
 *
 * The core reads and writes these properties through the AMQP codec: raw
 * content-header properties are AMQP's format, and so is x-death.
 */
import { decodeProperties, encodeProperties, type BasicProperties, type FieldTable, type FieldValue } from '../protocols/amqp/codec/index.js';
import type { DeathReason } from '../projections/records.js';

export interface Death {
  readonly queue: string;
  readonly reason: DeathReason;
  /** The exchange the message was published to and its routing key there. */
  readonly exchange: string;
  readonly routingKey: string;
  /** Milliseconds since the epoch. */
  readonly time: number;
}

const longString = (value: string): FieldValue => ({ type: 'S', value });

/** The properties of the copy that goes to the dead-letter exchange. */
export function propertiesAfterDeath(raw: Uint8Array, death: Death): { properties: Uint8Array; deaths: readonly FieldTable[] } {
  const properties = decodeProperties(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength));
  const headers: Record<string, FieldValue> = { ...(properties.headers ?? {}) };
  const deaths = updatedDeaths(headers['x-death'], death, properties.expiration);
  headers['x-death'] = { type: 'A', value: deaths.map((table): FieldValue => ({ type: 'F', value: table })) };
  if (headers['x-first-death-queue'] === undefined) {
    headers['x-first-death-queue'] = longString(death.queue);
    headers['x-first-death-reason'] = longString(death.reason);
    headers['x-first-death-exchange'] = longString(death.exchange);
  }
  headers['x-last-death-queue'] = longString(death.queue);
  headers['x-last-death-reason'] = longString(death.reason);
  headers['x-last-death-exchange'] = longString(death.exchange);
  const { expiration: _dropped, ...kept } = properties;
  const next: BasicProperties = { ...kept, headers };
  return { properties: encodeProperties(next), deaths };
}

function updatedDeaths(current: FieldValue | undefined, death: Death, expiration: string | undefined): FieldTable[] {
  const tables = current?.type === 'A' ? current.value.flatMap((value) => (value.type === 'F' ? [value.value] : [])) : [];
  const index = tables.findIndex((table) => textOf(table['queue']) === death.queue && textOf(table['reason']) === death.reason);
  if (index >= 0) {
    const table = tables[index]!;
    const count = table['count'];
    const previous = count?.type === 'l' ? Number(count.value) : count !== undefined && typeof count.value === 'number' ? count.value : 0;
    tables.splice(index, 1);
    return [{ ...table, count: { type: 'l', value: BigInt(previous + 1) } }, ...tables];
  }
  const table: Record<string, FieldValue> = {
    count: { type: 'l', value: 1n },
    reason: longString(death.reason),
    queue: longString(death.queue),
    time: { type: 'T', value: BigInt(Math.floor(death.time / 1000)) },
    exchange: longString(death.exchange),
    'routing-keys': { type: 'A', value: [longString(death.routingKey)] },
  };
  if (expiration !== undefined) table['original-expiration'] = longString(expiration);
  return [table, ...tables];
}

/**
 * RabbitMQ drops a dead-lettered message that would come back to a queue it
 * already died in, unless it was rejected somewhere on the way round (a
 * client's decision breaks the cycle; a TTL alone would loop forever).
 * `deaths` is the updated x-death, most recent first.
 */
export function closesCycle(deaths: readonly FieldTable[], reason: DeathReason, queue: string): boolean {
  if (reason === 'rejected') return false;
  // RabbitMQ's is_cycle: the deaths up to and including the last one in `queue`, none of them a rejection.
  for (const table of deaths) {
    if (textOf(table['reason']) === 'rejected') return false;
    if (textOf(table['queue']) === queue) return true;
  }
  return false;
}

function textOf(value: FieldValue | undefined): string | undefined {
  if (value?.type !== 'S') return undefined;
  return typeof value.value === 'string' ? value.value : value.value.toString('utf8');
}
