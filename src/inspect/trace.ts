/**
 * `cairn inspect trace`: the life of a message, from its msg record to the end
 * of each of its destinations. Select by `--lsn N` (the msg record), `--queue Q
 * --seq S`, `--client C --seq S`, or `--topic FILTER [--since --until]` (every
 * matching message, up to `--limit`, default 20).
 *
 * One pass over the log in LSN order: a message's destinations are
 * (session, seq) and (queue, seq) pairs; later records that name a pair are
 * its steps — deliver, ack (or PUBREC for QoS 2), drop (bound, purge, expired) — and
 * a session end or queue delete discards every pair of that destination still
 * open; a msg record that moves the message (its `movedFrom`) is a step too. A pair
 * still open at the end of the log is pending. A msg record that
 * dead-letters an open pair (its `d`) ends that pair, and the copy's
 * destinations join the same trace: published → delivered → dead-lettered to
 * X → consumed reads as one story. A record inside an AMQP transaction's group
 * (tx begin … commit, transaction-groups.ts) counts when the commit is read:
 * each pair it touched gets a step naming the transaction; a group an abort
 * record closes (a crash cut it) never happened, and the pairs it opened end
 * as discarded.
 */
import { topicMatchesFilter, validateTopicFilter } from '../core/topic-filter.js';
import { kindName, type BodyOf, type MsgBody } from '../projections/records.js';
import { countFlag, dataFlag, jsonFlag, lsnFlag, parseLsn, parsePositiveInteger, parseTime, requiredString, timeFlag, UsageError, type CommandSpec, type ParsedFlags } from './args.js';
import { isoTime, payloadPreview } from './format.js';
import { writeLines } from './output.js';
import { Progress, type InspectIo } from './progress.js';
import { describeRange, openSource, type LogSource } from './source.js';

const traceMessagesMaxDefault = 20;

/** What a trace reads of a record: the offline reader's LogRecord and the live log's records both have it. */
export interface TracedRecord { readonly lsn: number; readonly timestamp: number; readonly kind: number; readonly body: unknown }
interface Step { readonly lsn: number; readonly timestamp: number; readonly what: string }
interface DestinationTrace { readonly destination: string; readonly seq: number; readonly steps: Step[]; status: 'pending' | 'acked' | 'dropped' | 'discarded' | 'dead-lettered' }
export interface MessageTrace { readonly record: TracedRecord; readonly body: MsgBody; readonly destinations: DestinationTrace[] }

export type TraceSelector = Selector;
type Selector =
  | { readonly by: 'lsn'; readonly lsn: number }
  | { readonly by: 'seq'; readonly destination: string; readonly seq: number }
  | { readonly by: 'topic'; readonly filter: string; readonly since: number | undefined; readonly until: number | undefined };

export const traceCommand: CommandSpec = {
  name: 'inspect trace',
  summary: 'Follows messages from their msg record to the end of each destination: delivered, acked, dropped or still pending.\nSelect by --lsn N, --queue Q --seq S, --client C --seq S, or --topic FILTER.',
  flags: [
    dataFlag, jsonFlag,
    lsnFlag('lsn', 'the msg record to trace'),
    { name: 'queue', kind: 'value', valueName: 'NAME', help: 'with --seq: the message at this AMQP queue sequence number' },
    { name: 'client', kind: 'value', valueName: 'ID', help: 'with --seq: the message at this MQTT session sequence number' },
    countFlag('seq', 'the destination sequence number (with --queue or --client)'),
    { name: 'topic', kind: 'value', valueName: 'FILTER', help: 'every message whose topic matches this MQTT filter' },
    timeFlag('since', 'with --topic: messages at or after this time'),
    timeFlag('until', 'with --topic: messages at or before this time'),
    countFlag('limit', 'with --topic: at most this many messages', String(traceMessagesMaxDefault)),
  ],
  examples: ['cairn inspect trace --data ./data --client cold-room-worker --seq 3', "cairn inspect trace --data ./data --topic 'plant/#' --since 1h"],
};

export async function inspectTrace(flags: ParsedFlags, io: InspectIo): Promise<number> {
  const source = await openSource(requiredString('inspect trace', flags, 'data'));
  const selector = parseSelector(flags);
  const limitFlag = flags.strings.get('limit');
  const limit = limitFlag === undefined ? traceMessagesMaxDefault : parsePositiveInteger('limit', limitFlag);
  if (selector.by === 'lsn' && (selector.lsn < source.firstLsn || selector.lsn > source.lastLsn)) throw new UsageError(`LSN ${selector.lsn} is out of range: ${describeRange(source)}`);
  const traces = scan(source, selector, limit, io);
  if (selector.by === 'lsn' && traces.length === 0) throw new UsageError(`the record at LSN ${selector.lsn} is not a msg record: trace follows messages`);
  if (flags.booleans.has('json')) {
    await writeLines(io.stdout, traces.map((t) => JSON.stringify(traceJson(t))));
  } else {
    await writeLines(io.stdout, traces.length === 0 ? ['no matching message'] : traces.flatMap(traceLines));
  }
  return traces.length === 0 ? 1 : 0;
}

function parseSelector(flags: ParsedFlags): Selector {
  const s = flags.strings;
  const lsn = s.get('lsn');
  const seq = s.get('seq');
  const queue = s.get('queue');
  const client = s.get('client');
  const topic = s.get('topic');
  const given = [lsn, queue ?? client, topic].filter((v) => v !== undefined).length;
  if (given !== 1 || (queue !== undefined && client !== undefined)) throw new UsageError('give exactly one of --lsn N, --queue Q --seq S, --client C --seq S, or --topic FILTER');
  if (lsn !== undefined) return { by: 'lsn', lsn: parseLsn('lsn', lsn) };
  if (topic !== undefined) {
    const problem = validateTopicFilter(topic);
    if (problem !== undefined) throw new UsageError(`--topic '${topic}' is not an MQTT topic filter: ${problem}`);
    const now = Date.now();
    const since = s.get('since');
    const until = s.get('until');
    return { by: 'topic', filter: topic, since: since === undefined ? undefined : parseTime('since', since, now), until: until === undefined ? undefined : parseTime('until', until, now) };
  }
  if (seq === undefined) throw new UsageError(`--${queue !== undefined ? 'queue' : 'client'} needs --seq S`);
  return { by: 'seq', destination: queue !== undefined ? `queue ${queue}` : `session ${client!}`, seq: parsePositiveInteger('seq', seq) };
}

function destinationsOf(body: MsgBody): Array<[string, number, string]> {
  return [
    ...(body.s ?? []).map(([c, seq, qos]): [string, number, string] => [`session ${c}`, seq, ` (qos ${qos})`]),
    ...(body.u ?? []).map(([q, seq]): [string, number, string] => [`queue ${q}`, seq, '']),
    ...(body.g ?? []).map(([g, seq, qos]): [string, number, string] => [`group ${g}`, seq, ` (qos ${qos})`]),
  ];
}

function isCandidate(selector: Selector, record: TracedRecord, body: MsgBody): boolean {
  switch (selector.by) {
    case 'lsn': return record.lsn === selector.lsn;
    case 'seq': return destinationsOf(body).some(([d, seq]) => d === selector.destination && seq === selector.seq);
    case 'topic': {
      if (selector.since !== undefined && record.timestamp < selector.since) return false;
      if (selector.until !== undefined && record.timestamp > selector.until) return false;
      return topicMatchesFilter(body.x !== undefined ? body.t.replaceAll('.', '/') : body.t, selector.filter);
    }
  }
}

function scan(source: LogSource, selector: Selector, limit: number, io: InspectIo): MessageTrace[] {
  const progress = new Progress(io, 'trace', source.lastLsn - source.firstLsn + 1);
  try {
    return traceMessages((start) => source.reader.read(start), selector, limit, () => progress.tick());
  } finally {
    progress.finish();
  }
}

/**
 * The traces of the messages `selector` picks, from records read in LSN order
 * (`read` is asked for the first LSN or time that can matter). Used by
 * `cairn inspect trace` (a data directory); the HTTP API feeds a
 * MessageTracer itself, in chunks (http/log-records.ts).
 */
export function traceMessages(
  read: (start: { lsn?: number; time?: number }) => Iterable<TracedRecord>, selector: Selector, limit: number, onRecord: () => void = () => undefined,
): MessageTrace[] {
  const tracer = new MessageTracer(selector, limit);
  for (const record of read(tracer.start)) {
    onRecord();
    if (!tracer.take(record)) break;
  }
  return tracer.traces;
}

/** One pass of a trace, fed one record at a time in LSN order from `start` on. */
export class MessageTracer {
  readonly traces: MessageTrace[] = [];
  /** The first LSN or time that can matter. */
  readonly start: { lsn?: number; time?: number };
  // Open pairs: "destination#seq" → trace, and destination → its open pairs (for session end / queue delete).
  private readonly open = new Map<string, DestinationTrace>();
  private readonly byDestination = new Map<string, Set<string>>();
  /** The trace each open pair belongs to (a dead-lettered copy joins its original's). */
  private readonly traceOf = new Map<string, MessageTrace>();
  /** The transaction group being read: its begin LSN and the pairs its records touched. */
  private group: { readonly begin: number; readonly touched: Set<DestinationTrace> } | undefined = undefined;

  constructor(private readonly selector: Selector, private readonly limit: number) {
    this.start = selector.by === 'lsn' ? { lsn: selector.lsn } : selector.by === 'topic' && selector.since !== undefined ? { time: selector.since } : {};
  }

  /** Notes `record`; false once no later record can change the traces. */
  take(record: TracedRecord): boolean {
    const { open, byDestination, selector, traces, limit } = this;
    const kind = kindName(record.kind);
    const step = (what: string): Step => ({ lsn: record.lsn, timestamp: record.timestamp, what });
    if (kind === 'tx') {
      this.endOrBeginGroup(record.body as BodyOf['tx'], step);
      return true;
    }
    // A copy written so that an old segment could go (core/segment-release.ts): a step of the message it copies,
    // or, when that record is gone (retention removed it), where the trace starts.
    if (kind === 'msg' && (record.body as MsgBody).movedFrom !== undefined && this.isMoveOfOpen(record.body as MsgBody)) {
      for (const [destination, seq] of destinationsOf(record.body as MsgBody)) open.get(`${destination}#${seq}`)?.steps.push(step(`moved to LSN ${record.lsn} (copied out of an old segment so that retention could remove it)`));
    } else if (kind === 'msg') {
      const body = record.body as MsgBody;
      const originKey = body.d === undefined || body.movedFrom !== undefined ? undefined : `queue ${body.d[0]}#${body.d[1]}`;
      const origin = originKey === undefined ? undefined : open.get(originKey);
      if (origin !== undefined) {
        const trace = this.traceOf.get(originKey!)!;
        this.close(originKey!, origin, 'dead-lettered', step(`dead-lettered (${body.d![2]}) to exchange '${body.x ?? ''}' routing key '${body.t}': message LSN ${record.lsn}`));
        this.follow(trace, destinationsOf(body).map(([destination, seq]): DestinationTrace => ({ destination, seq, steps: [step(`queued (dead-lettered copy, message LSN ${record.lsn})`)], status: 'pending' })));
      } else if (traces.length < limit && isCandidate(selector, record, body)) {
        const trace: MessageTrace = { record, body, destinations: [] };
        traces.push(trace);
        this.follow(trace, destinationsOf(body).map(([destination, seq]): DestinationTrace => ({ destination, seq, steps: [], status: 'pending' })));
      }
    } else if (open.size > 0) {
      noteStep(record, kind, open, byDestination, this.close, step);
    }
    return !(open.size === 0 && (traces.length >= limit || selector.by === 'lsn'));
  }

  /** A tx record: the group before it ends (committed, or cut short by a crash), and a begin opens the next. */
  private endOrBeginGroup(body: BodyOf['tx'], step: (what: string) => Step): void {
    const group = this.group;
    this.group = undefined;
    if (group !== undefined) {
      const committed = body.op === 'commit';
      for (const d of group.touched) {
        if (committed) {
          d.steps.push(step(`in a transaction begun at LSN ${group.begin}, committed at LSN ${step('').lsn}`));
        } else if (d.status === 'pending' && d.steps.length === 0) {
          // Published in the torn group: the message never existed for the broker.
          this.close(`${d.destination}#${d.seq}`, d, 'discarded', step(`discarded: the transaction begun at LSN ${group.begin} was cut short by a crash and never committed`));
        } else {
          d.steps.push(step(`the transaction begun at LSN ${group.begin} was cut short by a crash: its steps above did not happen`));
        }
      }
    }
    if (body.op === 'begin') this.group = { begin: step('').lsn, touched: new Set() };
  }

  private isMoveOfOpen(body: MsgBody): boolean {
    return destinationsOf(body).some(([destination, seq]) => this.open.has(`${destination}#${seq}`));
  }

  private follow(trace: MessageTrace, destinations: readonly DestinationTrace[]): void {
    for (const d of destinations) {
      this.group?.touched.add(d);
      trace.destinations.push(d);
      const key = `${d.destination}#${d.seq}`;
      this.open.set(key, d);
      this.traceOf.set(key, trace);
      const set = this.byDestination.get(d.destination) ?? new Set<string>();
      set.add(key);
      this.byDestination.set(d.destination, set);
    }
  }

  private readonly close = (key: string, trace: DestinationTrace, status: DestinationTrace['status'], step: Step): void => {
    this.group?.touched.add(trace);
    trace.steps.push(step);
    trace.status = status;
    this.open.delete(key);
    this.traceOf.delete(key);
    this.byDestination.get(trace.destination)?.delete(key);
  };
}

function noteStep(
  record: TracedRecord, kind: ReturnType<typeof kindName>, open: Map<string, DestinationTrace>, byDestination: Map<string, Set<string>>,
  close: (key: string, trace: DestinationTrace, status: DestinationTrace['status'], step: Step) => void, step: (what: string) => Step,
): void {
  const body = record.body as Record<string, unknown>;
  const refOf = (b: Record<string, unknown>): string => (typeof b['c'] === 'string' ? `session ${b['c']}` : typeof b['g'] === 'string' ? `group ${b['g']}` : `queue ${String(b['q'])}`);
  switch (kind) {
    case 'deliver': {
      const destination = refOf(body);
      for (const seq of (body as unknown as BodyOf['deliver']).s) open.get(`${destination}#${seq}`)?.steps.push(step('delivered'));
      return;
    }
    case 'ack':
    case 'drop': {
      const destination = refOf(body);
      const why = kind === 'ack' ? 'acked' : `dropped (${dropReasons[(body as unknown as BodyOf['drop']).why]})`;
      for (const seq of (body as unknown as BodyOf['ack']).s) {
        const key = `${destination}#${seq}`;
        const trace = open.get(key);
        if (trace) close(key, trace, kind === 'ack' ? 'acked' : 'dropped', step(why));
      }
      return;
    }
    case 'rel': {
      const rel = body as unknown as BodyOf['rel'];
      if (rel.s === undefined || rel.clear) return;
      const key = rel.g === undefined ? `session ${rel.c}#${rel.s}` : `group ${rel.g}#${rel.s}`;
      const trace = open.get(key);
      if (trace) close(key, trace, 'acked', step(`PUBREC received (QoS 2, packet ${rel.id}): finished`));
      return;
    }
    case 'session':
    case 'queue': {
      const ended = kind === 'session' ? (body as unknown as BodyOf['session']).op === 'end' : (body as unknown as BodyOf['queue']).op === 'delete';
      if (!ended) return;
      const destination = kind === 'session' ? `session ${String(body['c'])}` : `queue ${String(body['n'])}`;
      for (const key of [...(byDestination.get(destination) ?? [])]) {
        const trace = open.get(key);
        if (trace) close(key, trace, 'discarded', step(kind === 'session' ? 'discarded: the session ended (clean session)' : 'discarded: the queue was deleted'));
      }
      return;
    }
    default:
  }
}

function publishedLine(t: MessageTrace): string {
  const { body, record } = t;
  const where = body.x !== undefined ? `exchange ${body.x || '(default)'} routing key ${body.t}` : `topic ${body.t}${body.qos !== undefined ? ` (qos ${body.qos})` : ''}`;
  const moved = body.movedFrom !== undefined ? ` (a copy of the msg record at LSN ${body.movedFrom}, moved out of a segment retention has removed since)` : '';
  return `message LSN ${record.lsn}${moved} at ${isoTime(record.timestamp)}: published${body.from !== undefined ? ` by ${body.from}` : ''} to ${where}${body.r ? ' (retained value queued on subscribe)' : ''}, payload ${payloadPreview(body.p)}`;
}

function traceLines(t: MessageTrace): string[] {
  const routed = destinationsOf(t.body).map(([d, seq, qos]) => `${d} seq ${seq}${qos}`);
  const lines = [publishedLine(t), `  routed to: ${routed.length === 0 ? 'no durable destination' : routed.join(', ')}`];
  for (const d of t.destinations) {
    for (const s of d.steps) lines.push(`  LSN ${String(s.lsn).padStart(8)}  ${isoTime(s.timestamp)}  ${d.destination} seq ${d.seq}: ${s.what}`);
    if (d.status === 'pending') lines.push(`  ${' '.repeat(14)}${' '.repeat(24)}  ${d.destination} seq ${d.seq}: still pending${d.steps.length > 0 ? ' (delivered, not acked)' : ''}`);
  }
  return lines;
}

export function traceJson(t: MessageTrace): Record<string, unknown> {
  return {
    lsn: t.record.lsn, time: isoTime(t.record.timestamp), topic: t.body.t, exchange: t.body.x, from: t.body.from, qos: t.body.qos, bytes: t.body.p.length,
    destinations: t.destinations.map((d) => ({ destination: d.destination, seq: d.seq, status: d.status, steps: d.steps.map((s) => ({ lsn: s.lsn, time: isoTime(s.timestamp), what: s.what })) })),
  };
}

const dropReasons: Readonly<Record<BodyOf['drop']['why'], string>> = {
  bound: 'queue bound reached, oldest dropped',
  purge: 'queue purged',
  acl: 'the ACL no longer lets the subscriber read its topic',
  expired: 'its TTL (AMQP) or MQTT 5 message expiry interval ran out while it was queued',
  delivery_limit: "delivered more times than its queue's x-delivery-limit allows",
};
