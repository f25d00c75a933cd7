/**
 * `cairn serve` configuration: flags, each with a CAIRN_* environment twin
 * (the flag wins), embedded defaults that serve on one machine with no set-up,
 * and validation that names the offending flag and says how to fix it.
 */
import { parseIngestRoutes, IngestRouteError, type IngestRoute } from './core/ingest.js';
import { clientCertificateModes, type ClientCertificateMode, type TlsSettings } from './protocols/tls-credentials.js';

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
  // ── at the edge (TLS, MQTT over WebSocket, topic ACL) ──
  /** undefined: no TLS listener at all. */
  readonly tls: TlsSettings | undefined;
  readonly mqttsPort: number | undefined;
  readonly amqpsPort: number | undefined;
  readonly httpsPort: number | undefined;
  readonly wsPort: number | undefined;
  readonly wssPort: number | undefined;
  readonly aclFile: string | undefined;
  /** Seconds between $SYS publications; 0: no $SYS topics. */
  readonly sysIntervalSeconds: number;
  /** The operator accepts that the log ends at this LSN, before the newest snapshot (src/log/recovery.ts, "log end"). */
  readonly acceptLostRecordsAfter: number | undefined;
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
  // ── at the edge: TLS, MQTT over WebSocket, topic ACL (parsed by edgeConfig) ──
  'tls-cert': { env: 'CAIRN_TLS_CERT', help: 'server certificate (PEM, chain included); with --tls-key turns on the TLS listeners', fallback: undefined },
  'tls-key': { env: 'CAIRN_TLS_KEY', help: 'private key of --tls-cert (PEM); both are re-read on SIGHUP', fallback: undefined },
  'tls-ca': { env: 'CAIRN_TLS_CA', help: 'CA bundle (PEM) that client certificates must chain to', fallback: undefined },
  'tls-client-cert': { env: 'CAIRN_TLS_CLIENT_CERT', help: "client certificates: 'none', 'optional' (verified when sent) or 'required'", fallback: 'none' },
  'tls-identity-as-username': { env: 'CAIRN_TLS_IDENTITY_AS_USERNAME', help: "'true': a client certificate's CN is the MQTT user name, no password (needs --tls-client-cert required)", fallback: 'false' },
  'mqtts-port': { env: 'CAIRN_MQTTS_PORT', help: "MQTT over TLS port (with --tls-cert); 0 picks a free one; 'off' disables", fallback: '8883' },
  'amqps-port': { env: 'CAIRN_AMQPS_PORT', help: "AMQP over TLS port (with --tls-cert); 0 picks a free one; 'off' disables", fallback: '5671' },
  'https-port': { env: 'CAIRN_HTTPS_PORT', help: "HTTP API over TLS port (with --tls-cert); 0 picks a free one; 'off' disables", fallback: '15671' },
  'ws-port': { env: 'CAIRN_WS_PORT', help: "MQTT over WebSocket port (ws://HOST:PORT/mqtt), e.g. 8080; 'off' disables", fallback: 'off' },
  'wss-port': { env: 'CAIRN_WSS_PORT', help: "MQTT over secure WebSocket port (wss://HOST:PORT/mqtt, with --tls-cert); 'off' disables", fallback: 'off' },
  acl: { env: 'CAIRN_ACL', help: "topic ACL file (Mosquitto's acl_file format), re-read on SIGHUP; none = every topic open", fallback: undefined },
  'sys-interval': { env: 'CAIRN_SYS_INTERVAL', help: 'seconds between MQTT $SYS topic updates (0: no $SYS topics)', fallback: '10' },
  'accept-lost-records-after': {
    env: 'CAIRN_ACCEPT_LOST_RECORDS_AFTER',
    help: 'start from the newest snapshot although the newest log segment(s) are missing, losing the records after it: give the LSN the log ends at, as the refusal names it',
    fallback: undefined,
  },
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
  const explicit = (name: string): string | undefined => values.get(name) ?? env[serveFlags[name]!.env];
  const get = (name: string): string | undefined => explicit(name) ?? serveFlags[name]!.fallback;
  return {
    ...edgeConfig(get, explicit),
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
    sysIntervalSeconds: positiveInteger('sys-interval', get('sys-interval')!, 0),
    acceptLostRecordsAfter: optional(get('accept-lost-records-after'), (v) => positiveInteger('accept-lost-records-after', v, 0)),
  };
}

/** The flags of the edge block: TLS settings and listeners, WebSocket listeners, the ACL file. */
function edgeConfig(get: (name: string) => string | undefined, explicit: (name: string) => string | undefined): Pick<ServeConfig, 'tls' | 'mqttsPort' | 'amqpsPort' | 'httpsPort' | 'wsPort' | 'wssPort' | 'aclFile'> {
  const tls = tlsSettings(get);
  const tlsPort = (flag: string): number | undefined => {
    if (tls === undefined) {
      if (explicit(flag) !== undefined && explicit(flag) !== 'off') throw new ConfigError(`--${flag} needs --tls-cert and --tls-key`);
      return undefined;
    }
    return port(flag, get(flag)!);
  };
  return {
    tls,
    mqttsPort: tlsPort('mqtts-port'),
    amqpsPort: tlsPort('amqps-port'),
    httpsPort: tlsPort('https-port'),
    wsPort: port('ws-port', get('ws-port')!),
    wssPort: tlsPort('wss-port'),
    aclFile: optional(get('acl'), (file) => file),
  };
}

function tlsSettings(get: (name: string) => string | undefined): TlsSettings | undefined {
  const certFile = optional(get('tls-cert'), (file) => file);
  const keyFile = optional(get('tls-key'), (file) => file);
  const caFile = optional(get('tls-ca'), (file) => file);
  const clientCertificates = get('tls-client-cert')!;
  if (!clientCertificateModes.includes(clientCertificates as ClientCertificateMode)) {
    throw new ConfigError(`--tls-client-cert '${clientCertificates}' must be one of ${clientCertificateModes.join(', ')}`);
  }
  const identityAsUsername = get('tls-identity-as-username')!;
  if (identityAsUsername !== 'true' && identityAsUsername !== 'false') throw new ConfigError(`--tls-identity-as-username '${identityAsUsername}' must be true or false`);
  if (certFile === undefined && keyFile === undefined) {
    if (caFile !== undefined || clientCertificates !== 'none' || identityAsUsername === 'true') throw new ConfigError('--tls-ca, --tls-client-cert and --tls-identity-as-username need --tls-cert and --tls-key');
    return undefined;
  }
  if (certFile === undefined || keyFile === undefined) throw new ConfigError('--tls-cert and --tls-key go together: give both');
  if (clientCertificates !== 'none' && caFile === undefined) throw new ConfigError(`--tls-client-cert ${clientCertificates} needs --tls-ca (the CA that client certificates chain to)`);
  if (identityAsUsername === 'true' && clientCertificates !== 'required') throw new ConfigError('--tls-identity-as-username true needs --tls-client-cert required (a name from an unverified certificate proves nothing)');
  return { certFile, keyFile, caFile, clientCertificates: clientCertificates as ClientCertificateMode, identityAsUsername: identityAsUsername === 'true' };
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
