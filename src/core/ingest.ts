/**
 * The ingest bridge: `filter:collection` routes that turn matching MQTT
 * publishes into documents, written as doc records in the same commit as the
 * message, so a PUBACK'd reading is also durably in its collection.
 *
 * Routes are split on their LAST ':' because an MQTT level may contain ':'.
 * A malformed route stops start-up: a filter like `a/#/b` matches nothing by
 * the spec, so accepting it would build a bridge that silently never fires.
 *
 * Documents: a JSON object payload is the document itself; any other JSON
 * value is wrapped as {"payload": value}; a payload that is not JSON but is
 * UTF-8 text becomes {"payload": "<text>"}; anything else (binary) becomes
 * {"payload": "<base64>", "_payload_encoding": "base64"}. `_topic` (the
 * concrete topic) and `_received_at` (epoch ms) are always added; the
 * collection gives each document an integer `_id`.
 */
import { topicMatchesFilter, validateTopicFilter } from './topic-filter.js';

export interface IngestRoute {
  readonly filter: string;
  readonly collection: string;
}

export class IngestRouteError extends Error {
  override readonly name = 'IngestRouteError';
  readonly code = 'EINGESTROUTE';
}

const collectionNamePattern = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,119}$/;

export function parseIngestRoutes(spec: string): IngestRoute[] {
  if (spec.trim() === '') return [];
  return spec.split(',').map((entry) => parseIngestRoute(entry.trim()));
}

function parseIngestRoute(entry: string): IngestRoute {
  const colon = entry.lastIndexOf(':');
  if (colon < 0) throw new IngestRouteError(`ingest route '${entry}' has no ':' — write it as filter:collection, e.g. sensors/#:sensor_readings`);
  const filter = entry.slice(0, colon);
  const collection = entry.slice(colon + 1);
  if (filter === '') throw new IngestRouteError(`ingest route '${entry}' has an empty topic filter`);
  if (collection === '') throw new IngestRouteError(`ingest route '${entry}' has an empty collection name`);
  const filterProblem = validateTopicFilter(filter);
  if (filterProblem !== undefined) throw new IngestRouteError(`ingest route '${entry}': topic filter '${filter}' is invalid: ${filterProblem}`);
  if (!collectionNamePattern.test(collection)) {
    throw new IngestRouteError(`ingest route '${entry}': collection name '${collection}' is invalid: use 1–120 letters, digits, '_', '-' or '.', not starting with '.' or '-'`);
  }
  return { filter, collection };
}

export function ingestMatches(route: IngestRoute, topic: string): boolean {
  return topicMatchesFilter(topic, route.filter);
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

export function documentOf(payload: Uint8Array, topic: string, receivedAt: number): Record<string, unknown> {
  const base = documentBody(payload);
  return { ...base, _topic: topic, _received_at: receivedAt };
}

function documentBody(payload: Uint8Array): Record<string, unknown> {
  let text: string;
  try {
    text = strictUtf8.decode(payload);
  } catch {
    return { payload: Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('base64'), _payload_encoding: 'base64' };
  }
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    return { payload: value };
  } catch {
    return { payload: text };
  }
}
