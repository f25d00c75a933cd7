/**
 * `cairn inspect state [--at LSN|TIME] [--json]`: the projected broker state
 * right after a record (default: the last one).
 *
 * --json prints one object: {"lsn","time","snapshotLsn","recordsReplayed",
 * "summary": {sessions, retained, exchanges, queues, bindings, collections, groups},
 * "state": encodeState(state) with byte fields as {"utf8"|"base64"}} — the
 * "state" field is exactly what a snapshot at that LSN would hold.
 */
import { encodeState } from '../projections/snapshot-codec.js';
import type { BrokerState, SessionState } from '../projections/state.js';
import { subscriptionOptionsBody } from '../projections/subscription-options.js';
import { dataFlag, jsonFlag, parsePoint, pointProblem, requiredString, type CommandSpec, type ParsedFlags } from './args.js';
import { isoTime, payloadPreview, subscriptionOptionsText, toJsonValue } from './format.js';
import { writeLines } from './output.js';
import { projectState, resolvePoint } from './project.js';
import type { InspectIo } from './progress.js';
import { openSource } from './source.js';

export const stateCommand: CommandSpec = {
  name: 'inspect state',
  summary: 'Prints the projected broker state (sessions, retained, exchanges, queues, bindings, collections, shared subscription groups) right after a record.',
  flags: [dataFlag, jsonFlag, { name: 'at', kind: 'value', valueName: 'LSN|TIME', help: 'an LSN, an ISO-8601 time or a duration ago (default: the last record)', check: pointProblem }],
  examples: ['cairn inspect state --data ./data --at 2026-11-29T10:15:00Z --json'],
};

export async function inspectState(flags: ParsedFlags, io: InspectIo): Promise<number> {
  const source = await openSource(requiredString('inspect state', flags, 'data'));
  const at = flags.strings.get('at');
  const lsn = resolvePoint(source, at === undefined ? undefined : parsePoint('at', at, Date.now()));
  const projected = projectState(source, lsn, io);
  const { state } = projected;
  if (flags.booleans.has('json')) {
    const out = { lsn, time: state.lastTimestamp > 0 ? isoTime(state.lastTimestamp) : null, snapshotLsn: projected.snapshotLsn, recordsReplayed: projected.recordsReplayed, summary: summary(state), state: toJsonValue(encodeState(state)) };
    await writeLines(io.stdout, [JSON.stringify(out)]);
    return 0;
  }
  const from = projected.snapshotLsn > 0 ? `snapshot at LSN ${projected.snapshotLsn}` : 'the start of the log';
  await writeLines(io.stdout, [`state at LSN ${lsn}${state.lastTimestamp > 0 ? ` (${isoTime(state.lastTimestamp)})` : ''}: replayed ${projected.recordsReplayed} record(s) from ${from}`, ...stateLines(state)]);
  return 0;
}

export function summary(state: BrokerState): Record<string, unknown> {
  return {
    sessions: [...state.sessions.values()].map((s) => ({
      client: s.clientId, subscriptions: Object.fromEntries(s.subscriptions),
      // MQTT 5 options under the sub record's short keys, only for the subscriptions that have some.
      ...(s.subscriptionOptions.size > 0 ? { subscriptionOptions: Object.fromEntries([...s.subscriptionOptions].map(([filter, options]) => [filter, subscriptionOptionsBody(options)])) } : {}),
      pending: s.pending.size, dropped: s.dropped, rx2: s.rx2.size, rel: s.rel.size,
      ...(s.expiresAt === undefined ? {} : { expires: isoTime(s.expiresAt) }),
      ...(s.will === undefined ? {} : { will: { topic: s.will.topic, qos: s.will.qos, retain: s.will.retain, at: isoTime(s.will.at), bytes: s.will.payload.length } }),
    })),
    retained: [...state.retained.values()].map((r) => ({ topic: r.topic, qos: r.qos, bytes: r.payload.length, lsn: r.lsn })),
    exchanges: [...state.exchanges.values()].map((e) => ({ name: e.name, type: e.type, autoDelete: e.autoDelete })),
    queues: [...state.queues.values()].map((q) => ({ name: q.name, depth: q.pending.size, dropped: q.dropped, nextSeq: q.nextSeq, autoDelete: q.autoDelete })),
    bindings: [...state.bindings.values()].map((b) => ({ exchange: b.exchange, queue: b.queue, routingKey: b.routingKey })),
    collections: [...state.collections.values()].map((c) => ({ name: c.name, documents: c.documents.size, nextId: c.nextId })),
    groups: [...state.groups.values()].map((g) => ({ name: g.name, members: [...g.members], depth: g.pending.size, dropped: g.dropped, nextSeq: g.nextSeq })),
  };
}

function stateLines(state: BrokerState): string[] {
  const lines = [`sessions (${state.sessions.size}):`];
  for (const s of state.sessions.values()) {
    const subscriptions = [...s.subscriptions].map(([filter, qos]) => `${filter} (qos ${qos}${subscriptionOptionsText(subscriptionOptionsBody(s.subscriptionOptions.get(filter)))})`).join(', ') || 'none';
    lines.push(`  ${s.clientId}  pending ${s.pending.size}  dropped ${s.dropped}  qos2-in ${s.rx2.size}  pubcomp-owed ${s.rel.size}  subscriptions: ${subscriptions}${offlineText(s)}`);
  }
  lines.push(`retained (${state.retained.size}):`);
  for (const r of state.retained.values()) lines.push(`  ${r.topic}  qos ${r.qos}  ${payloadPreview(r.payload)}  set at LSN ${r.lsn}`);
  lines.push(`exchanges (${state.exchanges.size}):`);
  for (const e of state.exchanges.values()) lines.push(`  ${e.name}  ${e.type}${e.autoDelete ? '  auto-delete' : ''}`);
  lines.push(`queues (${state.queues.size}):`);
  for (const q of state.queues.values()) lines.push(`  ${q.name}  depth ${q.pending.size}  dropped ${q.dropped}  next seq ${q.nextSeq}${q.autoDelete ? '  auto-delete' : ''}`);
  lines.push(`bindings (${state.bindings.size}):`);
  for (const b of state.bindings.values()) lines.push(`  ${b.exchange || '(default)'} -> ${b.queue}  key ${b.routingKey}`);
  lines.push(`shared subscription groups (${state.groups.size}):`);
  for (const g of state.groups.values()) lines.push(`  ${g.name}  depth ${g.pending.size}  dropped ${g.dropped}  next seq ${g.nextSeq}  persistent members: ${[...g.members].join(', ')}`);
  lines.push(`collections (${state.collections.size}):`);
  for (const c of state.collections.values()) lines.push(`  ${c.name}  ${c.documents.size} document(s)`);
  return lines;
}

/** An offline MQTT 5 session's end and its will waiting for its delay (session-expiry.ts). */
function offlineText(session: SessionState): string {
  const expires = session.expiresAt === undefined ? '' : `  expires ${isoTime(session.expiresAt)}`;
  const will = session.will;
  return will === undefined ? expires : `${expires}  pending will: topic ${will.topic} qos ${will.qos}${will.retain ? ' retained' : ''} ${payloadPreview(will.payload)} at ${isoTime(will.at)}`;
}
