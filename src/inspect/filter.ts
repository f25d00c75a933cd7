/**
 * Record filters shared by `records` and `stats`: kind, LSN range, time range,
 * client, queue, MQTT topic filter. A record passes when it matches every
 * filter given.
 */
import { topicMatchesFilter, validateTopicFilter } from '../core/topic-filter.js';
import type { LogRecord } from '../log/index.js';
import { kindName, RecordKind, type RecordKindName } from '../projections/records.js';
import type { FlagSpec } from '../command-line/flags.js';
import { countFlag, lsnFlag, parseLsn, parsePositiveInteger, parseTime, timeFlag, UsageError, type ParsedFlags } from './args.js';

export interface RecordFilter {
  readonly kinds: ReadonlySet<number> | undefined;
  readonly fromLsn: number | undefined;
  readonly toLsn: number | undefined;
  readonly since: number | undefined;
  readonly until: number | undefined;
  readonly client: string | undefined;
  readonly queue: string | undefined;
  readonly topic: string | undefined;
  readonly limit: number | undefined;
}

/** What a filter reads of a record: the offline reader's records and the live log's both have it. */
export type FilteredRecord = Omit<LogRecord, 'size'>;

export const filterFlags: readonly FlagSpec[] = [
  { name: 'kind', kind: 'value', valueName: 'KINDS', help: `record kinds, comma-separated (${Object.keys(RecordKind).join(', ')})` },
  lsnFlag('from', 'first LSN'),
  lsnFlag('to', 'last LSN'),
  timeFlag('since', 'records at or after this time: ISO-8601 or a duration ago (2h)'),
  timeFlag('until', 'records at or before this time'),
  { name: 'client', kind: 'value', valueName: 'ID', help: 'records naming this MQTT client id' },
  { name: 'queue', kind: 'value', valueName: 'NAME', help: 'records naming this AMQP queue' },
  { name: 'topic', kind: 'value', valueName: 'FILTER', help: "msg/retain records whose topic matches this MQTT filter ('plant/#')" },
  countFlag('limit', 'stop after this many records'),
];

export function parseFilter(flags: ParsedFlags, now: number): RecordFilter {
  const s = flags.strings;
  const get = <T>(name: string, parse: (value: string) => T): T | undefined => {
    const value = s.get(name);
    return value === undefined ? undefined : parse(value);
  };
  const topic = s.get('topic');
  if (topic !== undefined) {
    const problem = validateTopicFilter(topic);
    if (problem !== undefined) throw new UsageError(`--topic '${topic}' is not an MQTT topic filter: ${problem}`);
  }
  const filter: RecordFilter = {
    kinds: get('kind', parseKinds),
    fromLsn: get('from', (v) => parseLsn('from', v)),
    toLsn: get('to', (v) => parseLsn('to', v)),
    since: get('since', (v) => parseTime('since', v, now)),
    until: get('until', (v) => parseTime('until', v, now)),
    client: s.get('client'),
    queue: s.get('queue'),
    topic,
    limit: get('limit', (v) => parsePositiveInteger('limit', v)),
  };
  if (filter.fromLsn !== undefined && filter.toLsn !== undefined && filter.toLsn < filter.fromLsn) throw new UsageError(`--to ${filter.toLsn} is before --from ${filter.fromLsn}`);
  return filter;
}

function parseKinds(value: string): Set<number> {
  const kinds = new Set<number>();
  for (const name of value.split(',').map((k) => k.trim()).filter((k) => k !== '')) {
    const kind = (RecordKind as Record<string, number>)[name];
    if (kind === undefined) throw new UsageError(`--kind: unknown record kind '${name}' (known: ${Object.keys(RecordKind).join(', ')})`);
    kinds.add(kind);
  }
  if (kinds.size === 0) throw new UsageError('--kind needs at least one kind');
  return kinds;
}

/** Where a read should start: the reader skips whole segments by LSN and by time. */
export function readStart(filter: RecordFilter): { lsn?: number; time?: number } {
  return { ...(filter.fromLsn !== undefined ? { lsn: filter.fromLsn } : {}), ...(filter.since !== undefined ? { time: filter.since } : {}) };
}

/** True once no later record can pass (LSN past --to). --until filters but does not stop: clocks can step back. */
export function pastEnd(filter: RecordFilter, record: FilteredRecord): boolean {
  return filter.toLsn !== undefined && record.lsn > filter.toLsn;
}

export function matches(filter: RecordFilter, record: FilteredRecord): boolean {
  if (filter.kinds !== undefined && !filter.kinds.has(record.kind)) return false;
  if (filter.fromLsn !== undefined && record.lsn < filter.fromLsn) return false;
  if (filter.since !== undefined && record.timestamp < filter.since) return false;
  if (filter.until !== undefined && record.timestamp > filter.until) return false;
  const body = record.body as Record<string, unknown>;
  const kind = kindName(record.kind);
  if (filter.client !== undefined && !namesClient(kind, body, filter.client)) return false;
  if (filter.queue !== undefined && !namesQueue(kind, body, filter.queue)) return false;
  if (filter.topic !== undefined && !matchesTopic(kind, body, filter.topic)) return false;
  return true;
}

function namesClient(kind: RecordKindName | undefined, body: Record<string, unknown>, client: string): boolean {
  if (body['c'] === client) return true;
  if (kind !== 'msg') return false;
  if (body['from'] === client) return true;
  const sessions = body['s'] as ReadonlyArray<readonly [string, number, number]> | undefined;
  return sessions?.some(([c]) => c === client) ?? false;
}

function namesQueue(kind: RecordKindName | undefined, body: Record<string, unknown>, queue: string): boolean {
  if (body['q'] === queue) return true;
  if (kind === 'queue') return body['n'] === queue;
  if (kind !== 'msg') return false;
  const queues = body['u'] as ReadonlyArray<readonly [string, number]> | undefined;
  return queues?.some(([q]) => q === queue) ?? false;
}

/**
 * msg and retain records match on their topic; an AMQP message's routing key
 * is matched with `.` read as `/` (the bridge's mapping). sub/unsub match when
 * their filter is equal to the one given.
 */
function matchesTopic(kind: RecordKindName | undefined, body: Record<string, unknown>, filter: string): boolean {
  if (kind === 'sub' || kind === 'unsub') return body['f'] === filter;
  if (kind !== 'msg' && kind !== 'retain') return false;
  const topic = body['t'];
  if (typeof topic !== 'string') return false;
  const name = kind === 'msg' && body['x'] !== undefined ? topic.replaceAll('.', '/') : topic;
  return topicMatchesFilter(name, filter);
}
