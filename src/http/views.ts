/**
 * Cairn's own HTTP resources (MQTT sessions and shared-subscription groups, collections, the log): each turns the broker's state (and runtime) into one
 * JSON response body. Read-only; they never write records. Synchronous, except the collection queries, which read
 * their documents from the log in chunks (collection-query.ts) and answer `examined` and `partial` beside the result.
 *
 * Listings are capped at `listItemsMax` entries (with `truncated: true`) so a
 * broker with a million sessions cannot make one request build a huge answer.
 */
import type { Broker } from '../core/broker.js';
import { documentSource, type DocumentSource } from '../core/collection-documents.js';
import { countDocuments, findDocuments, type ScanLimits } from './collection-query.js';
import { HttpError } from './http-error.js';
import { logPositionOf } from './log-position.js';
import { parseQuery, type QueryInput } from './query.js';

export const listItemsMax = 10_000;
export const documentsLimitDefault = 100;
export const documentsLimitMax = 1_000;
/** The query parameters each collection route reads; the server refuses any other (a misspelled `?filtr=` must not return everything). */
export const documentsParameters: readonly string[] = ['filter', 'sort', 'skip', 'limit', 'projection'];
export const countParameters: readonly string[] = ['filter'];

function capped<T>(items: T[]): { items: T[]; truncated: boolean } {
  return items.length > listItemsMax ? { items: items.slice(0, listItemsMax), truncated: true } : { items, truncated: false };
}

function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function sessionsView(broker: Broker): unknown {
  const sessions = [...broker.sessions.values()].sort((a, b) => byName(a.clientId, b.clientId)).map((session) => ({
    clientId: session.clientId,
    connected: session.link !== undefined,
    persistent: session.persistent,
    // MQTT 5 options (noLocal, retainAsPublished, retainHandling, identifier) only where set.
    subscriptions: [...session.state.subscriptions].map(([filter, qos]) => ({ filter, qos, ...session.state.subscriptionOptions.get(filter) })),
    pending: session.state.pending.size,
    /** Its own messages and shared-subscription deliveries. */
    inflight: session.unacked.size + session.sharedInflight.size,
    dropped: session.state.dropped,
  }));
  const { items, truncated } = capped(sessions);
  return { total: sessions.length, truncated, sessions: items };
}

/** MQTT shared-subscription groups: members (connected or not), ready and in-flight messages; persistent while a persistent session is a member. */
export function sharedSubscriptionsView(broker: Broker): unknown {
  const groups = [...broker.shared.groups.values()].sort((a, b) => byName(a.name, b.name)).map((group) => ({
    name: group.name,
    shareName: group.shareName,
    filter: group.filter,
    persistent: group.durableState !== undefined,
    members: group.members.list.map((member) => ({ clientId: member.clientId, connected: member.link !== undefined, qos: group.memberQos.get(member) ?? 0 })),
    ready: group.readyCount,
    inflight: group.unacked.size,
    dropped: group.durableState?.dropped ?? 0,
  }));
  const { items, truncated } = capped(groups);
  return { total: groups.length, truncated, groups: items };
}

export function collectionsView(broker: Broker): unknown {
  const collections = [...broker.state.collections.values()].sort((a, b) => byName(a.name, b.name)).map((collection) => ({
    name: collection.name,
    documents: collection.documents.size,
  }));
  return { collections };
}

/** Parse the query-string JSON parameters; bad JSON is a 400 that names the parameter. */
function jsonParameter(parameters: URLSearchParams, name: string): unknown {
  const text = parameters.get(name);
  if (text === null || text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error: unknown) {
    throw new HttpError(400, 'bad_request', `${name} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The collection's documents as of now: those whose records are durable (so readable from the log). */
function documentsOf(broker: Broker, name: string): DocumentSource {
  const collection = broker.state.collections.get(name);
  if (!collection) throw new HttpError(404, 'not_found', `no collection named '${name}'`);
  return documentSource(broker.log, collection, logPositionOf(broker.log).durableLsn);
}

/** `/api/collections/NAME/documents?filter=&sort=&skip=&limit=&projection=` (MongoDB semantics, see query.ts). */
export async function documentsView(broker: Broker, name: string, parameters: URLSearchParams, limits: ScanLimits): Promise<unknown> {
  const input: QueryInput = {
    filter: jsonParameter(parameters, 'filter'),
    sort: jsonParameter(parameters, 'sort'),
    skip: parameters.get('skip') ?? undefined,
    limit: parameters.get('limit') ?? String(documentsLimitDefault),
    projection: jsonParameter(parameters, 'projection'),
  };
  const query = parseQuery(input);
  if (query.limit !== undefined && query.limit > documentsLimitMax) {
    throw new HttpError(400, 'bad_request', `limit must be at most ${documentsLimitMax}, got ${query.limit}`);
  }
  const { documents, examined, partial } = await findDocuments(documentsOf(broker, name), query, limits);
  return { collection: name, skip: query.skip, limit: query.limit, count: documents.length, examined, partial, documents };
}

/** `/api/collections/NAME/count?filter=`: how many documents match, without sending them (`partial`: at least that many). */
export async function countView(broker: Broker, name: string, parameters: URLSearchParams, limits: ScanLimits): Promise<unknown> {
  const query = parseQuery({ filter: jsonParameter(parameters, 'filter') });
  const { count, examined, partial } = await countDocuments(documentsOf(broker, name), query, limits);
  return { collection: name, count, examined, partial };
}

interface SnapshotAware {
  readonly snapshotLsn?: number;
}

export function logView(broker: Broker): unknown {
  const position = logPositionOf(broker.log);
  const reported = (broker.log as SnapshotAware).snapshotLsn;
  const lastSnapshot = typeof reported === 'number'
    ? { lsn: reported, source: 'log' }
    : broker.recovery && broker.recovery.snapshotLsn > 0 ? { lsn: broker.recovery.snapshotLsn, source: 'start-up' } : null;
  return {
    nextLsn: position.nextLsn,
    firstLsn: position.firstLsn,
    durableLsn: position.durableLsn,
    lastLsn: broker.state.lastLsn,
    bytes: position.bytes ?? null,
    segments: position.segments ?? null,
    lastSnapshot,
    history: position.history,
    recovery: broker.recovery ?? null,
  };
}
