/**
 * `cairn serve` configuration, declared as data: each flag has a CAIRN_*
 * environment twin, a default that serves on one machine with no set-up, a
 * kind that checks and converts its value, and help text. Values come from
 * flag > environment > config file (--config, YAML) > default; an invalid one
 * stops start-up with a message that names the flag (or variable, or file line).
 */
import { readConfigFile } from './command-line/config-file.js';
import { parseCommand, UsageError, type CommandSpec, type FlagSpec, type ParsedCommand } from './command-line/flags.js';
import { choiceKind, countKind, durationKind, portKind, sizeKind, textKind, type ValueKind } from './command-line/value-kinds.js';
import { parseIngestRoutes, IngestRouteError, type IngestRoute } from './core/ingest.js';
import { edgeConfigOf, edgeFlags, type EdgeConfig } from './edge-config.js';
import { logFormats, logLevels, type LogFormat, type LogLevel } from './log-levels.js';
import { LogError } from './log/errors.js';
import { parseJetStreamAddress, type JetStreamAddress } from './log/jetstream/jetstream-address.js';
import { leaseTtlMsMin } from './log/jetstream/lease-limits.js';
import { parseDuration } from './command-line/units.js';

export { parseDuration, parseSize } from './command-line/units.js';
export { UsageError } from './command-line/flags.js';

export interface ServeConfig extends EdgeConfig {
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
  readonly releaseSegments: boolean;
  readonly retentionBytes: number | undefined;
  readonly retentionMs: number | undefined;
  readonly archiveDir: string | undefined;
  readonly sessionQueueMessagesMax: number;
  readonly queueReadyMessagesMax: number;
  readonly sessionQueueBytesMax: number;
  readonly queueReadyBytesMax: number;
  readonly messageCacheBytes: number;
  /** Below this much free space on the log's file system publishers are held back (0: never). */
  readonly diskFreeLimitBytes: number;
  readonly mqttPacketBytesMax: number | undefined;
  /** Documents one HTTP collection query examines at most (HttpLimits.queryDocumentsExaminedMax). */
  readonly queryDocumentsExaminedMax: number;
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
  /** /metrics and /metrics/per-object are rendered at most once per this many ms (http/kept-exposition.ts); 0: every request. */
  readonly statsIntervalMs: number;
  /** Seconds between $SYS publications; 0: no $SYS topics. */
  readonly sysIntervalSeconds: number;
  /** The operator accepts that the log ends at this LSN, before the newest snapshot (src/log/recovery.ts, "log end"). */
  readonly acceptLostRecordsAfter: number | undefined;
  /** --log nats://…/stream: the JetStream log instead of the file log in dataDir (served-log.ts). */
  readonly logAddress: JetStreamAddress | undefined;
  readonly natsCredsFile: string | undefined;
  /** Replicas of a stream (and its buckets) that --log creates. */
  readonly natsReplicas: number;
  /** How long the JetStream log's writer lease outlives its holder's last renewal: the standby's takeover delay. */
  readonly leaseTtlMs: number;
}

const logAddressKind: ValueKind<JetStreamAddress> = {
  kind: 'value', valueName: 'ADDRESS',
  check: (value) => {
    try {
      parseJetStreamAddress(value);
      return undefined;
    } catch (error) {
      if (error instanceof LogError) return `is not a JetStream log address: ${error.message}`;
      throw error;
    }
  },
  convert: parseJetStreamAddress,
};

const leaseTtlKind: ValueKind<number> = {
  ...durationKind,
  check: (value) => durationKind.check(value) ?? (parseDuration(value)! < leaseTtlMsMin ? `must be at least ${leaseTtlMsMin} ms` : undefined),
};

/** JetStream replicates a stream on 1 to 5 servers (R1, R3 and R5 are the usual layouts). */
const natsReplicasKind: ValueKind<number> = { ...choiceKind(['1', '2', '3', '4', '5'] as const), valueName: 'N', convert: Number };

/** A configuration the user got wrong: exit 2, like every usage error. */
export const ConfigError = UsageError;

const ingestKind: ValueKind<IngestRoute[]> = {
  kind: 'value', valueName: 'ROUTES',
  check: (value) => {
    try {
      parseIngestRoutes(value);
      return undefined;
    } catch (error) {
      if (error instanceof IngestRouteError) return `is not a list of routes: ${error.message}`;
      throw error;
    }
  },
  convert: parseIngestRoutes,
};

const kinds = {
  port: portKind,
  segmentBytes: sizeKind(4096),
  snapshotEvery: countKind(0),
  retentionBytes: sizeKind(0),
  retentionAge: durationKind,
  messages: countKind(1),
  documents: countKind(1),
  queueBytes: sizeKind(1),
  cacheBytes: sizeKind(0),
  diskFreeBytes: sizeKind(0),
  packetBytes: sizeKind(64),
  logLevel: choiceKind(logLevels),
  logFormat: choiceKind(logFormats),
  seconds: countKind(0),
  lsn: { ...countKind(0), valueName: 'LSN' },
  releaseSegments: choiceKind(['auto', 'off'] as const),
} as const;

export const serveFlags: readonly FlagSpec[] = [
  { name: 'config', ...textKind('FILE'), env: 'CAIRN_CONFIG', help: 'read flags from this YAML file (keys are the flag names; flags and environment win over it)' },
  { name: 'print-config', kind: 'boolean', help: 'print the effective configuration, with where each value came from, and exit' },
  { name: 'data', ...textKind('DIR'), env: 'CAIRN_DATA', fallback: './data', help: 'data directory (the log and snapshots)' },
  { name: 'bind', ...textKind('ADDRESS'), env: 'CAIRN_BIND', fallback: '127.0.0.1', help: 'address the listeners bind to' },
  { name: 'mqtt-port', ...kinds.port, env: 'CAIRN_MQTT_PORT', fallback: '1883', help: "MQTT port; 0 picks a free one; 'off' disables" },
  { name: 'amqp-port', ...kinds.port, env: 'CAIRN_AMQP_PORT', fallback: '5672', help: "AMQP port; 0 picks a free one; 'off' disables" },
  { name: 'http-port', ...kinds.port, env: 'CAIRN_HTTP_PORT', fallback: '15672', help: "HTTP API port; 0 picks a free one; 'off' disables" },
  { name: 'ingest', ...ingestKind, env: 'CAIRN_INGEST', fallback: '', help: "ingest routes 'filter:collection,…' (e.g. 'sensors/#:sensor_readings')" },
  { name: 'users', ...textKind('FILE'), env: 'CAIRN_USERS', help: 'users file (JSON with scrypt hashes; see cairn passwd); none = anonymous' },
  { name: 'segment-bytes', ...kinds.segmentBytes, env: 'CAIRN_SEGMENT_BYTES', fallback: '64MiB', help: 'roll to a new log segment past this size' },
  { name: 'snapshot-every', ...kinds.snapshotEvery, env: 'CAIRN_SNAPSHOT_EVERY', fallback: '100000', help: 'snapshot after this many records (0: never)' },
  { name: 'retention-bytes', ...kinds.retentionBytes, env: 'CAIRN_RETENTION_BYTES', help: 'keep at least this much log for point-in-time recovery' },
  { name: 'retention-age', ...kinds.retentionAge, env: 'CAIRN_RETENTION_AGE', help: 'keep log younger than this for point-in-time recovery' },
  { name: 'release-segments', ...kinds.releaseSegments, env: 'CAIRN_RELEASE_SEGMENTS', fallback: 'auto', help: "auto: before each snapshot, copy the few messages still queued in old, mostly consumed segments to the head of the log, so that retention can remove those segments; off: such messages keep their segments" },
  { name: 'archive', ...textKind('DIR'), env: 'CAIRN_ARCHIVE', help: 'move retired segments and snapshots here instead of deleting them' },
  { name: 'session-queue-max', ...kinds.messages, env: 'CAIRN_SESSION_QUEUE_MAX', fallback: '4096', help: 'messages an MQTT session may hold before the oldest is dropped' },
  { name: 'session-queue-max-bytes', ...kinds.queueBytes, env: 'CAIRN_SESSION_QUEUE_MAX_BYTES', fallback: '256MiB', help: 'payload bytes an MQTT session may hold before the oldest are dropped' },
  { name: 'queue-max', ...kinds.messages, env: 'CAIRN_QUEUE_MAX', fallback: '10000000', help: 'ready messages an AMQP queue may hold before the oldest is dropped' },
  { name: 'queue-max-bytes', ...kinds.queueBytes, env: 'CAIRN_QUEUE_MAX_BYTES', fallback: '4GiB', help: 'payload bytes of ready messages an AMQP queue may hold before the oldest are dropped' },
  { name: 'disk-free-limit', ...kinds.diskFreeBytes, env: 'CAIRN_DISK_FREE_LIMIT', fallback: '50MB', help: "below this much free disk space for the log, AMQP publishers are held back (connection.blocked) until space is freed, as RabbitMQ's disk alarm does (0: never)" },
  { name: 'message-cache', ...kinds.cacheBytes, env: 'CAIRN_MESSAGE_CACHE', fallback: '16MiB', help: 'recently published messages kept in memory, so consumers that keep up never read the disk (0: none)' },
  { name: 'query-documents-max', ...kinds.documents, env: 'CAIRN_QUERY_DOCUMENTS_MAX', fallback: '100000', help: 'documents one HTTP collection query reads at most; past it the answer says partial' },
  { name: 'mqtt-max-packet-bytes', ...kinds.packetBytes, env: 'CAIRN_MQTT_MAX_PACKET_BYTES', help: 'largest MQTT packet accepted' },
  { name: 'log-level', ...kinds.logLevel, env: 'CAIRN_LOG_LEVEL', fallback: 'info', help: 'least severe log level written' },
  { name: 'log-format', ...kinds.logFormat, env: 'CAIRN_LOG_FORMAT', fallback: 'auto', help: 'json lines, pretty lines, or auto (pretty on a terminal)' },
  ...edgeFlags,
  {
    name: 'stats-interval', ...durationKind, env: 'CAIRN_STATS_INTERVAL', fallback: '5s',
    help: 'render /metrics and /metrics/per-object at most once per this long, as RabbitMQ samples its statistics (0s: every scrape)',
  },
  { name: 'sys-interval', ...kinds.seconds, valueName: 'SECONDS', env: 'CAIRN_SYS_INTERVAL', fallback: '10', help: 'seconds between MQTT $SYS topic updates (0: no $SYS topics)' },
  { name: 'log', ...logAddressKind, env: 'CAIRN_LOG', help: 'replicate the log in a NATS JetStream stream instead of --data: nats://host:4222,host2:4222/stream (tls:// for TLS); nodes on one stream fail over' },
  { name: 'nats-creds', ...textKind('FILE'), env: 'CAIRN_NATS_CREDS', help: 'NATS credentials file (.creds) for --log' },
  { name: 'nats-replicas', ...natsReplicasKind, env: 'CAIRN_NATS_REPLICAS', fallback: '3', help: 'with --log: replicas of the stream, its snapshot bucket and lease a new log creates (an existing stream keeps its own); 1 for a single nats-server, 3 for production' },
  { name: 'lease-ttl', ...leaseTtlKind, env: 'CAIRN_LEASE_TTL', fallback: '5s', help: 'with --log: how long the writer lease outlives its holder (a standby takes over after it)' },
  {
    name: 'accept-lost-records-after', ...kinds.lsn, env: 'CAIRN_ACCEPT_LOST_RECORDS_AFTER',
    help: 'start from the newest snapshot although the newest log segment(s) are missing, losing the records after it: give the LSN the log ends at, as the refusal names it',
  },
];

export const serveCommand: CommandSpec = {
  name: 'serve',
  summary: 'Starts the broker. Every flag has a CAIRN_* environment twin and may be a key of the --config file;\na flag wins over the environment, which wins over the file, which wins over the default.',
  flags: serveFlags,
  notes: [
    'sizes: bytes or a number with a unit: kB MB GB (powers of 1000), K M G or KiB MiB GiB (powers of 1024)\ndurations: a number and a unit: ms s m h d w',
  ],
  examples: [
    'cairn serve --data /var/lib/cairn --bind 0.0.0.0 --segment-bytes 128MiB --retention-age 7d',
    "cairn serve --config cairn.yaml --ingest 'sensors/#:sensor_readings' --print-config",
    'cairn serve --log nats://nats1:4222,nats2:4222,nats3:4222/cairn --nats-creds cairn.creds --bind 0.0.0.0',
  ],
};

/** Config-file keys: every flag but the ones about the file itself. */
export const serveFileKeys: readonly string[] = serveFlags.map((flag) => flag.name).filter((name) => name !== 'config' && name !== 'print-config');

/** Parse `cairn serve` argv with the environment and the --config file; throws UsageError. */
export function readServeCommand(args: readonly string[], env: NodeJS.ProcessEnv): ParsedCommand {
  return parseCommand(serveCommand, args, env, (file) => readConfigFile(file, serveFileKeys));
}

export function parseServeArgs(args: readonly string[], env: NodeJS.ProcessEnv): ServeConfig {
  return serveConfigOf(readServeCommand(args, env));
}

/** The typed configuration of a parsed (and so already checked) command. */
export function serveConfigOf(parsed: ParsedCommand): ServeConfig {
  const get = (name: string): string | undefined => {
    const value = parsed.values.get(name)?.value;
    return value === '' ? undefined : value;
  };
  const required = (name: string): string => get(name) ?? '';
  const optional = <T>(name: string, kind: ValueKind<T>): T | undefined => {
    const value = get(name);
    return value === undefined ? undefined : kind.convert(value);
  };
  return {
    ...edgeConfigOf(parsed),
    dataDir: required('data'),
    bind: required('bind'),
    mqttPort: kinds.port.convert(required('mqtt-port')),
    amqpPort: kinds.port.convert(required('amqp-port')),
    httpPort: kinds.port.convert(required('http-port')),
    ingestRoutes: optional('ingest', ingestKind) ?? [],
    usersFile: get('users'),
    segmentBytesMax: kinds.segmentBytes.convert(required('segment-bytes')),
    snapshotEveryRecords: kinds.snapshotEvery.convert(required('snapshot-every')),
    releaseSegments: kinds.releaseSegments.convert(required('release-segments')) === 'auto',
    retentionBytes: optional('retention-bytes', kinds.retentionBytes),
    diskFreeLimitBytes: kinds.diskFreeBytes.convert(required('disk-free-limit')),
    retentionMs: optional('retention-age', kinds.retentionAge),
    archiveDir: get('archive'),
    sessionQueueMessagesMax: kinds.messages.convert(required('session-queue-max')),
    queueReadyMessagesMax: kinds.messages.convert(required('queue-max')),
    sessionQueueBytesMax: kinds.queueBytes.convert(required('session-queue-max-bytes')),
    queueReadyBytesMax: kinds.queueBytes.convert(required('queue-max-bytes')),
    messageCacheBytes: kinds.cacheBytes.convert(required('message-cache')),
    mqttPacketBytesMax: optional('mqtt-max-packet-bytes', kinds.packetBytes),
    queryDocumentsExaminedMax: kinds.documents.convert(required('query-documents-max')),
    logLevel: kinds.logLevel.convert(required('log-level')),
    logFormat: kinds.logFormat.convert(required('log-format')),
    sysIntervalSeconds: kinds.seconds.convert(required('sys-interval')),
    statsIntervalMs: durationKind.convert(required('stats-interval')),
    acceptLostRecordsAfter: optional('accept-lost-records-after', kinds.lsn),
    logAddress: optional('log', logAddressKind),
    natsCredsFile: get('nats-creds'),
    natsReplicas: natsReplicasKind.convert(required('nats-replicas')),
    leaseTtlMs: leaseTtlKind.convert(required('lease-ttl')),
  };
}
