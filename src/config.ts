/**
 * `cairn serve` configuration: flags, each with a CAIRN_* environment twin
 * (the flag wins), embedded defaults that serve on one machine with no set-up,
 * and validation that names the offending flag and says how to fix it.
 */
import { parseIngestRoutes, IngestRouteError, type IngestRoute } from './core/ingest.js';

export interface ServeConfig {
  readonly dataDir: string;
  readonly bind: string;
  /** undefined: the listener is off. 0: pick a free port. */
  readonly mqttPort: number | undefined;
  readonly amqpPort: number | undefined;
  readonly httpPort: number | undefined;
  readonly ingestRoutes: readonly IngestRoute[];
  readonly usersFile: string | undefined;
  readonly segmentBytesMax: number;
  readonly snapshotEveryRecords: number;
  readonly retentionBytes: number | undefined;
  readonly retentionMs: number | undefined;
  readonly archiveDir: string | undefined;
  readonly sessionQueueMessagesMax: number;
  readonly queueReadyMessagesMax: number;
  readonly mqttPacketBytesMax: number | undefined;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'ECONFIG';
}

interface FlagSpec {
  readonly env: string;
  readonly help: string;
  readonly fallback: string | undefined;
}

export const serveFlags: Readonly<Record<string, FlagSpec>> = {
  data: { env: 'CAIRN_DATA', help: 'data directory (the log and snapshots)', fallback: './data' },
  bind: { env: 'CAIRN_BIND', help: 'address the listeners bind to', fallback: '127.0.0.1' },
  'mqtt-port': { env: 'CAIRN_MQTT_PORT', help: "MQTT port; 0 picks a free one; 'off' disables", fallback: '1883' },
  'amqp-port': { env: 'CAIRN_AMQP_PORT', help: "AMQP port; 0 picks a free one; 'off' disables", fallback: '5672' },
  'http-port': { env: 'CAIRN_HTTP_PORT', help: "HTTP API port; 0 picks a free one; 'off' disables", fallback: '15672' },
  ingest: { env: 'CAIRN_INGEST', help: "ingest routes 'filter:collection,…' (e.g. 'sensors/#:sensor_readings')", fallback: '' },
  users: { env: 'CAIRN_USERS', help: 'users file (JSON with scrypt hashes; see cairn passwd); none = anonymous', fallback: undefined },
  'segment-bytes': { env: 'CAIRN_SEGMENT_BYTES', help: 'roll to a new log segment past this size', fallback: String(64 * 1024 * 1024) },
  'snapshot-every': { env: 'CAIRN_SNAPSHOT_EVERY', help: 'snapshot after this many records (0: never)', fallback: '100000' },
  'retention-bytes': { env: 'CAIRN_RETENTION_BYTES', help: 'keep at least this many bytes of log for point-in-time recovery', fallback: undefined },
  'retention-age': { env: 'CAIRN_RETENTION_AGE', help: "keep log younger than this for point-in-time recovery (e.g. '7d', '12h')", fallback: undefined },
  archive: { env: 'CAIRN_ARCHIVE', help: 'move retired segments here instead of deleting them', fallback: undefined },
  'session-queue-max': { env: 'CAIRN_SESSION_QUEUE_MAX', help: 'messages an MQTT session may hold before the oldest is dropped', fallback: '4096' },
  'queue-max': { env: 'CAIRN_QUEUE_MAX', help: 'ready messages an AMQP queue may hold before the oldest is dropped', fallback: '100000' },
  'mqtt-max-packet-bytes': { env: 'CAIRN_MQTT_MAX_PACKET_BYTES', help: 'largest MQTT packet accepted', fallback: undefined },
};

export function parseServeArgs(args: readonly string[], env: NodeJS.ProcessEnv): ServeConfig {
  const values = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument '${arg}': cairn serve takes only --flags (see cairn serve --help)`);
    const eq = arg.indexOf('=');
    const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
    if (!(name in serveFlags)) throw new ConfigError(`unknown flag --${name} (see cairn serve --help for the flags)`);
    const value = eq >= 0 ? arg.slice(eq + 1) : args[++i];
    if (value === undefined) throw new ConfigError(`flag --${name} needs a value`);
    values.set(name, value);
  }
  const get = (name: string): string | undefined => values.get(name) ?? env[serveFlags[name]!.env] ?? serveFlags[name]!.fallback;
  return {
    dataDir: get('data')!,
    bind: get('bind')!,
    mqttPort: port('mqtt-port', get('mqtt-port')!),
    amqpPort: port('amqp-port', get('amqp-port')!),
    httpPort: port('http-port', get('http-port')!),
    ingestRoutes: ingest(get('ingest')!),
    usersFile: get('users'),
    segmentBytesMax: positiveInteger('segment-bytes', get('segment-bytes')!, 4096),
    snapshotEveryRecords: positiveInteger('snapshot-every', get('snapshot-every')!, 0),
    retentionBytes: optional(get('retention-bytes'), (v) => positiveInteger('retention-bytes', v, 0)),
    retentionMs: optional(get('retention-age'), (v) => duration('retention-age', v)),
    archiveDir: get('archive'),
    sessionQueueMessagesMax: positiveInteger('session-queue-max', get('session-queue-max')!, 1),
    queueReadyMessagesMax: positiveInteger('queue-max', get('queue-max')!, 1),
    mqttPacketBytesMax: optional(get('mqtt-max-packet-bytes'), (v) => positiveInteger('mqtt-max-packet-bytes', v, 64)),
  };
}

function optional<T>(value: string | undefined, parse: (value: string) => T): T | undefined {
  return value === undefined || value === '' ? undefined : parse(value);
}

function port(flag: string, value: string): number | undefined {
  if (value === 'off') return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535) throw new ConfigError(`--${flag} '${value}' is not a port: use 0–65535, 0 for any free port, or 'off'`);
  return n;
}

function positiveInteger(flag: string, value: string, min: number): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min) throw new ConfigError(`--${flag} '${value}' must be an integer ≥ ${min}`);
  return n;
}

const durationUnitsMs: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

export function parseDuration(value: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$/.exec(value.trim());
  if (!match) return undefined;
  return Math.round(Number(match[1]) * durationUnitsMs[match[2]!]!);
}

function duration(flag: string, value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined) throw new ConfigError(`--${flag} '${value}' is not a duration: use a number and a unit, e.g. 90s, 30m, 12h, 7d`);
  return ms;
}

function ingest(value: string): IngestRoute[] {
  try {
    return parseIngestRoutes(value);
  } catch (error) {
    if (error instanceof IngestRouteError) throw new ConfigError(`--ingest: ${error.message}`);
    throw error;
  }
}

export function serveHelp(): string {
  const rows = Object.entries(serveFlags).map(([name, spec]) => `  --${name.padEnd(22)} ${spec.help}\n  ${''.padEnd(24)} env ${spec.env}${spec.fallback ? `, default ${spec.fallback}` : ''}`);
  return `cairn serve [flags]\n\nStarts the broker. Every flag has an environment twin; the flag wins.\n\n${rows.join('\n')}\n`;
}
