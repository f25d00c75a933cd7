/**
 * How records and payloads are shown: one-line summaries for tables and
 * JSON-safe values for `--json`.
 *
 * JSON byte encoding (documented in the CLI help): every byte field (payload
 * `p`, AMQP properties `h`) becomes `{"utf8": "..."}` when the bytes are valid
 * UTF-8 text, else `{"base64": "..."}`. It is lossless: the full bytes, not a
 * preview.
 */
import { kindName, type BodyOf, type DestinationRef, type MessagePropertiesBody } from '../projections/records.js';
import type { SubscriptionOptionsBody } from '../projections/subscription-options.js';

const previewCharsMax = 40;
const utf8 = new TextDecoder('utf-8', { fatal: true });

function asText(bytes: Uint8Array): string | undefined {
  try {
    const text = utf8.decode(bytes);
    // Control characters other than tab/newline make it binary for display purposes.
    return /[\u0000-\u0008\u000b-\u001f\u007f]/.test(text) ? undefined : text;
  } catch {
    return undefined;
  }
}

/** `"hello"` (5 B), or hex for binary: `0x0a1b…` (12 B). */
export function payloadPreview(bytes: Uint8Array): string {
  const text = asText(bytes);
  if (text !== undefined) {
    const cut = text.length > previewCharsMax ? `${text.slice(0, previewCharsMax)}…` : text;
    return `${JSON.stringify(cut)} (${bytes.length} B)`;
  }
  const hex = Buffer.from(bytes.subarray(0, previewCharsMax / 2)).toString('hex');
  return `0x${hex}${bytes.length > previewCharsMax / 2 ? '…' : ''} (${bytes.length} B)`;
}

export function bytesToJson(bytes: Uint8Array): { utf8: string } | { base64: string } {
  const text = asText(bytes);
  return text !== undefined ? { utf8: text } : { base64: Buffer.from(bytes).toString('base64') };
}

/** Deep copy with every Uint8Array replaced by bytesToJson. */
export function toJsonValue(value: unknown): unknown {
  if (value instanceof Uint8Array) return bytesToJson(value);
  if (Array.isArray(value)) return value.map(toJsonValue);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, field] of Object.entries(value)) if (field !== undefined) out[key] = toJsonValue(field);
    return out;
  }
  return value;
}

export function isoTime(timestamp: number): string {
  const date = new Date(timestamp);
  return Number.isNaN(date.getTime()) ? String(timestamp) : date.toISOString();
}

export function kindLabel(kind: number): string {
  return kindName(kind) ?? `kind${kind}`;
}

export function destinationLabel(ref: DestinationRef): string {
  if ('c' in ref) return `session ${ref.c}`;
  return 'q' in ref ? `queue ${ref.q}` : `group ${ref.g}`;
}

function seqList(seqs: readonly number[]): string {
  return seqs.length <= 8 ? seqs.join(',') : `${seqs.slice(0, 8).join(',')},… (${seqs.length})`;
}

/** One line describing a record body: who, what topic or queue, which seqs, a payload preview. */
export function summarize(kind: number, body: unknown): string {
  const b = body as Record<string, unknown>;
  switch (kindName(kind)) {
    case 'session': {
      const s = b as unknown as BodyOf['session'];
      const expiry = s.e !== undefined ? ` expiry=${s.e}s` : s.until !== undefined ? ` until=${isoTime(s.until)}` : '';
      const will = s.w === undefined ? '' : ` will=${s.w.t} qos=${s.w.qos}${s.w.r === true ? ' retained' : ''} at=${isoTime(s.w.at)} payload=${payloadPreview(s.w.p)}`;
      return `client=${s.c} ${s.op}${expiry}${will}`;
    }
    case 'sub': { const s = b as unknown as BodyOf['sub']; return `client=${s.c} filter=${s.f} qos=${s.qos}${subscriptionOptionsText(s)}`; }
    case 'unsub': { const s = b as unknown as BodyOf['unsub']; return `client=${s.c} filter=${s.f}`; }
    case 'msg': return summarizeMsg(b as unknown as BodyOf['msg']);
    case 'ack':
    case 'deliver': { const s = b as unknown as BodyOf['ack']; return `${destinationLabel(s)} seq=${seqList(s.s)}`; }
    case 'drop': { const s = b as unknown as BodyOf['drop']; return `${destinationLabel(s)} seq=${seqList(s.s)} why=${s.why}`; }
    case 'retain': { const s = b as unknown as BodyOf['retain']; return `topic=${s.t} qos=${s.qos} ${s.p.length === 0 ? 'cleared' : `payload=${payloadPreview(s.p)}`}`; }
    case 'rx2': { const s = b as unknown as BodyOf['rx2']; return `client=${s.c} packet=${s.id}${s.clear ? ' cleared (PUBREL)' : ' seen'}`; }
    case 'rel': { const s = b as unknown as BodyOf['rel']; return `client=${s.c} packet=${s.id}${s.clear ? ' cleared (PUBCOMP)' : ` PUBREC seq=${String(s.s)}`}`; }
    case 'exchange': { const s = b as unknown as BodyOf['exchange']; return `exchange=${s.n} ${s.op}${s.type ? ` type=${s.type}` : ''}${s.autoDelete ? ' auto-delete' : ''}`; }
    case 'queue': { const s = b as unknown as BodyOf['queue']; return `queue=${s.n} ${s.op}${s.autoDelete ? ' auto-delete' : ''}`; }
    case 'bind': { const s = b as unknown as BodyOf['bind']; return `${s.op} exchange=${s.x || '(default)'} ${s.e === undefined ? `queue=${s.q ?? ''}` : `to-exchange=${s.e}`} key=${s.k}${s.a === undefined ? '' : ` arguments=${s.a.byteLength}B`}`; }
    case 'tx': { const s = b as unknown as BodyOf['tx']; return s.op === 'abort' ? `transaction abort: the group begun at LSN ${String(s.begin)} was cut short by a crash and is not applied` : `transaction ${s.op}`; }
    case 'doc': { const s = b as unknown as BodyOf['doc']; return `collection=${s.col} id=${s.id} ${JSON.stringify(s.doc).slice(0, 60)}`; }
    default: return JSON.stringify(toJsonValue(body)).slice(0, 120);
  }
}

/** MQTT 5 subscription options, as ` no-local retain-as-published retain-handling=1 id=7` (empty when none). */
export function subscriptionOptionsText(options: SubscriptionOptionsBody): string {
  const parts: string[] = [];
  if (options.nl === true) parts.push('no-local');
  if (options.rap === true) parts.push('retain-as-published');
  if (options.rh !== undefined) parts.push(`retain-handling=${options.rh}`);
  if (options.id !== undefined) parts.push(`id=${options.id}`);
  return parts.length === 0 ? '' : ` ${parts.join(' ')}`;
}

/** MQTT 5 properties, as `mqtt5{...}`: what a publisher attached, for forensics. */
function summarizeMessageProperties(m: MessagePropertiesBody): string {
  const parts: string[] = [];
  if (m.pf === 1) parts.push('payload=utf8');
  if (m.ea !== undefined) parts.push(`expires=${new Date(m.ea).toISOString()}`);
  if (m.ct !== undefined) parts.push(`content-type=${m.ct}`);
  if (m.rt !== undefined) parts.push(`response-topic=${m.rt}`);
  if (m.cd !== undefined) parts.push(`correlation=${Buffer.from(m.cd).toString('hex').slice(0, 32)}`);
  for (const [name, value] of m.up ?? []) parts.push(`${name}=${value}`);
  return `mqtt5{${parts.join(' ')}}`;
}

function summarizeMsg(m: BodyOf['msg']): string {
  const parts: string[] = [];
  if (m.x !== undefined) parts.push(`exchange=${m.x || '(default)'} key=${m.t}`);
  else parts.push(`topic=${m.t}`);
  if (m.from !== undefined) parts.push(`from=${m.from}`);
  if (m.qos !== undefined) parts.push(`qos=${m.qos}`);
  if (m.r) parts.push('retained');
  if (m.rp) parts.push('retain-flag');
  if (m.movedFrom !== undefined) parts.push(`moved-from=LSN ${m.movedFrom}`);
  if (m.m !== undefined) parts.push(summarizeMessageProperties(m.m));
  const destinations = [...(m.s ?? []).map(([c, seq]) => `c:${c}#${seq}`), ...(m.u ?? []).map(([q, seq]) => `q:${q}#${seq}`), ...(m.g ?? []).map(([g, seq]) => `g:${g}#${seq}`)];
  if (destinations.length > 0) parts.push(`-> ${destinations.length <= 6 ? destinations.join(' ') : `${destinations.slice(0, 6).join(' ')} … (${destinations.length})`}`);
  parts.push(`payload=${payloadPreview(m.p)}`);
  return parts.join(' ');
}
