/**
 * `cairn inspect stats [--from --to --since --until …filters]`: records, bytes
 * and rate by kind over the range; top topics (msg), clients (publishers and
 * session destinations) and queues (destinations); and, whatever the range,
 * what pins the log now (the oldest message still queued: retention keeps its
 * segment and every newer one).
 */
import { describeLogPinLine } from '../log-pin-report.js';
import { kindLabel } from './format.js';
import { dataFlag, jsonFlag, requiredString, type CommandSpec, type ParsedFlags } from './args.js';
import { filterFlags, matches, parseFilter, pastEnd, readStart } from './filter.js';
import { writeLines } from './output.js';
import { logPinOf } from './pin.js';
import { Progress, type InspectIo } from './progress.js';
import { openSource } from './source.js';
import type { MsgBody } from '../projections/records.js';
import { RecordKind } from '../projections/records.js';

const topEntries = 10;

interface KindStats { records: number; bytes: number }

export const statsCommand: CommandSpec = {
  name: 'inspect stats',
  summary: 'Counts records, bytes and rates by kind over a range, with the top topics, clients and queues,\nand shows what pins the log (the oldest message still queued, its age and the bytes it holds).',
  flags: [dataFlag, jsonFlag, ...filterFlags],
  examples: ['cairn inspect stats --data ./data --since 1h'],
};

export async function inspectStats(flags: ParsedFlags, io: InspectIo): Promise<number> {
  const source = await openSource(requiredString('inspect stats', flags, 'data'));
  const filter = parseFilter(flags, Date.now());
  const byKind = new Map<string, KindStats>();
  const topics = new Map<string, number>();
  const clients = new Map<string, number>();
  const queues = new Map<string, number>();
  let first: number | undefined;
  let last: number | undefined;
  let records = 0;
  let bytes = 0;
  const start = readStart(filter);
  const progress = new Progress(io, 'stats', source.lastLsn - (start.lsn ?? source.firstLsn) + 1);
  try {
    for (const record of source.reader.read(start)) {
      progress.tick();
      if (pastEnd(filter, record)) break;
      if (!matches(filter, record)) continue;
      records++;
      bytes += record.size;
      first ??= record.timestamp;
      last = record.timestamp;
      const kind = byKind.get(kindLabel(record.kind)) ?? { records: 0, bytes: 0 };
      kind.records++;
      kind.bytes += record.size;
      byKind.set(kindLabel(record.kind), kind);
      // A moved copy (its `movedFrom`) is not another message.
      if (record.kind === RecordKind.msg && (record.body as MsgBody).movedFrom === undefined) count(record.body as MsgBody, topics, clients, queues);
      if (filter.limit !== undefined && records >= filter.limit) break;
    }
  } finally {
    progress.finish();
  }
  const seconds = first === undefined || last === undefined ? 0 : Math.max(0, last - first) / 1000;
  const rate = (n: number): number => (seconds > 0 ? n / seconds : 0);
  const kinds = [...byKind].sort((a, b) => b[1].records - a[1].records).map(([kind, s]) => ({ kind, records: s.records, bytes: s.bytes, recordsPerSecond: rate(s.records) }));
  const top = (m: Map<string, number>): Array<{ name: string; messages: number }> => [...m].sort((a, b) => b[1] - a[1]).slice(0, topEntries).map(([name, messages]) => ({ name, messages }));
  const pinned = logPinOf(source, io, Date.now());
  const pin = 'unknown' in pinned ? { unknown: pinned.unknown } : (pinned.pin ?? null);
  const result = { records, bytes, seconds, recordsPerSecond: rate(records), kinds, topTopics: top(topics), topClients: top(clients), topQueues: top(queues), pin };
  if (flags.booleans.has('json')) {
    await writeLines(io.stdout, [JSON.stringify(result)]);
    return 0;
  }
  const lines = [
    `${records} record(s), ${bytes} bytes over ${seconds.toFixed(1)} s (${result.recordsPerSecond.toFixed(1)} records/s)`,
    `${'kind'.padEnd(10)} ${'records'.padStart(10)} ${'bytes'.padStart(12)} ${'records/s'.padStart(10)}`,
    ...kinds.map((k) => `${k.kind.padEnd(10)} ${String(k.records).padStart(10)} ${String(k.bytes).padStart(12)} ${k.recordsPerSecond.toFixed(1).padStart(10)}`),
    'top topics (messages):', ...result.topTopics.map((t) => `  ${String(t.messages).padStart(8)}  ${t.name}`),
    'top clients (published + received persistent):', ...result.topClients.map((t) => `  ${String(t.messages).padStart(8)}  ${t.name}`),
    'top queues (messages routed):', ...result.topQueues.map((t) => `  ${String(t.messages).padStart(8)}  ${t.name}`),
    'unknown' in pinned ? `oldest live message: unknown (${pinned.unknown})` : describeLogPinLine(pinned.pin),
  ];
  await writeLines(io.stdout, lines);
  return 0;
}

function count(body: MsgBody, topics: Map<string, number>, clients: Map<string, number>, queues: Map<string, number>): void {
  const topic = body.x !== undefined ? `${body.x || '(default)'}:${body.t}` : body.t;
  topics.set(topic, (topics.get(topic) ?? 0) + 1);
  if (body.from !== undefined) clients.set(body.from, (clients.get(body.from) ?? 0) + 1);
  for (const [client] of body.s ?? []) clients.set(client, (clients.get(client) ?? 0) + 1);
  for (const [queue] of body.u ?? []) queues.set(queue, (queues.get(queue) ?? 0) + 1);
}
