/**
 * The composition root: lock the data directory, open the log, replay it into
 * the broker, start the MQTT, AMQP and HTTP listeners, and report what was
 * recovered — one log line each, as an operator reads them after a crash.
 * Also the library entry point for embedding Cairn in a Node program (see
 * src/index.ts).
 *
 * Fail-stop: when the log fails (a write or fdatasync error, after which
 * nothing can be acknowledged again; see log/errors.ts), the broker does not
 * linger accepting connections it cannot serve: one fatal line, the listeners
 * close, and `stopped` rejects; `cairn serve` then exits with its own code
 * so the supervisor restarts it into recovery.
 */
import type { Timers } from './core/timers.js';
import { AclFile } from './auth/acl-file.js';
import { loadUsersFile, anonymousUsers, type Users } from './auth/users.js';
import type { ServeConfig } from './config.js';
import { Broker } from './core/broker.js';
import { checkDescriptorBudget, currentOpenFilesLimit } from './descriptor-budget.js';
import { defaultHttpLimits } from './http/limits.js';
import type { ListenerAddress } from './http/management/resources.js';
import { startHttpServer } from './http/server.js';
import { SegmentedLog, type LogFailedError, type LogFileSystem, type SyncLanes } from './log/index.js';
import { openFileLog, openJetStreamServedLog, type ServedLog } from './served-log.js';
import type { Logger } from './logger.js';
import { Metrics } from './metrics.js';
import { DiskFreeAlarm, diskFreeCheckIntervalMs, type FreeBytes } from './disk-free-alarm.js';
import { defaultAmqpLimits } from './protocols/amqp/limits.js';
import { startAmqpServer, type AmqpServer } from './protocols/amqp/server.js';
import type { ManagedConnection } from './protocols/connection-description.js';
import { defaultMqttLimits } from './protocols/mqtt/limits.js';
import { startMqttServer, type MqttServerOptions } from './protocols/mqtt/server.js';
import { TlsCredentials } from './protocols/tls-credentials.js';
import { startSysTopics } from './sys-topics.js';
import { version } from './version.js';

export interface RunningCairn {
  readonly broker: Broker;
  readonly log: ServedLog;
  readonly mqttPort: number | undefined;
  readonly amqpPort: number | undefined;
  readonly httpPort: number | undefined;
  readonly mqttsPort: number | undefined;
  readonly amqpsPort: number | undefined;
  readonly httpsPort: number | undefined;
  readonly wsPort: number | undefined;
  readonly wssPort: number | undefined;
  /**
   * SIGHUP: re-read the ACL file and the TLS certificate files. What fails to
   * load is logged and keeps its old version; the failures are returned.
   * Connections stay up either way.
   */
  reload(): Promise<{ readonly failures: readonly string[] }>;
  /** Stop the listeners, wait for in-flight appends, close the log, release the data directory. */
  close(): Promise<void>;
  /**
   * Settles when the broker has stopped. Resolves after close(). Rejects with
   * the LogFailedError when the log failed (a write or fdatasync error): by
   * then the listeners are closed and the log and the data directory released
   * (fail-stop; a restart replays the log). Left unhandled, the rejection ends
   * the process, which is what `cairn serve` does on purpose.
   */
  readonly stopped: Promise<void>;
}

/** For tests only (fault injection), not part of the embedding API. */
export interface StartInternals {
  readonly logFileSystem?: LogFileSystem;
  /** Where the file log's lone batches sync (test hook: one lane forced). */
  readonly syncLanes?: SyncLanes;
  /** The disk-free alarm's view of free space, and how often it looks (tests fill the disk this way). */
  readonly freeBytes?: FreeBytes;
  readonly diskFreeCheckIntervalMs?: number;
  /** The broker's clock and timers (message TTL and x-expires tests move time themselves). */
  readonly clock?: () => number;
  readonly timers?: Timers;
}

// A failed log stops the broker: at most this long for the listeners and the log to close before `stopped` rejects anyway.
const failStopCloseMs = 5_000;

/** The disk-free alarm of a file log (a JetStream log has no local disk to fill); it tells the AMQP connections. */
function diskFreeAlarm(config: ServeConfig, internals: StartInternals, logger: Logger, amqpListeners: ReadonlyArray<AmqpServer | undefined>): DiskFreeAlarm | undefined {
  if (config.logAddress !== undefined || config.diskFreeLimitBytes === 0) return undefined;
  return new DiskFreeAlarm({
    dir: config.dataDir, limitBytes: config.diskFreeLimitBytes, checkIntervalMs: internals.diskFreeCheckIntervalMs ?? diskFreeCheckIntervalMs,
    ...(internals.freeBytes !== undefined ? { freeBytes: internals.freeBytes } : {}),
    changed: (reason, freeBytes) => {
      if (reason !== undefined) logger.warn({ freeBytes, limitBytes: config.diskFreeLimitBytes }, 'disk alarm: free space for the log is below --disk-free-limit; AMQP publishers are blocked');
      else logger.info({ freeBytes }, 'disk alarm cleared: AMQP publishers unblocked');
      for (const listener of amqpListeners) for (const connection of listener?.list() ?? []) connection.publishAlarmChanged(reason);
    },
    failed: (error) => logger.warn({ err: error }, 'disk alarm: free space could not be read'),
  });
}

export async function startCairn(config: ServeConfig, logger: Logger, internals: StartInternals = {}): Promise<RunningCairn> {
  const users: Users = config.usersFile ? await loadUsersFile(config.usersFile) : anonymousUsers;
  // Both stop start-up with their reason (the ACL's names the line) before the log is opened.
  const acl = config.aclFile === undefined ? undefined : await AclFile.load(config.aclFile);
  const tls = config.tls === undefined ? undefined : await TlsCredentials.load(config.tls);
  const metrics = new Metrics();
  const stop = new Stopper(logger);
  try {
    const options = { config, logger, metrics, onFailed: (error: LogFailedError) => stop.failStop(error), logFileSystem: internals.logFileSystem, syncLanes: internals.syncLanes };
    // A standby (--log nats://…) waits in here, before any listener opens, until it takes the writer lease.
    const opened = config.logAddress === undefined ? await openFileLog(options) : await openJetStreamServedLog(options);
    const { log } = opened;
    stop.closeLast(() => opened.close());
    const broker = Broker.open({
      log,
      ...(opened.warm !== undefined ? { warm: opened.warm } : {}),
      logger: logger.child({ component: 'core' }),
      observer: metrics,
      ingestRoutes: config.ingestRoutes,
      ...(internals.clock !== undefined ? { clock: internals.clock } : {}),
      ...(internals.timers !== undefined ? { timers: internals.timers } : {}),
      limits: {
        snapshotEveryRecords: config.snapshotEveryRecords,
        releaseSegments: config.releaseSegments,
        sessionQueueMessagesMax: config.sessionQueueMessagesMax,
        sessionQueueBytesMax: config.sessionQueueBytesMax,
        queueReadyMessagesMax: config.queueReadyMessagesMax,
        queueReadyBytesMax: config.queueReadyBytesMax,
        messageCacheBytes: config.messageCacheBytes,
      },
    });
    stop.beforeLog(() => broker.flush());
    reportRecovery(broker, config, logger);
    broker.mqtt.startSessionExpiry();
    /** Start a listener when its port is configured; it is closed when the broker stops. */
    const start = async <L extends { close(): Promise<void> }>(name: string, port: number | undefined, begin: (port: number) => Promise<L>): Promise<L | undefined> => {
      const listener = await listening(name, config.bind, port, begin);
      if (listener === undefined) return undefined;
      stop.listener(() => listener.close());
      return listener;
    };
    const mqttOptions = (port: number): MqttServerOptions => ({
      core: broker.mqtt, host: config.bind, port, logger, users, connectionEvents: metrics, acl,
      accessDenied: (action) => metrics.accessDenied(action === 'write' ? 'publish' : action),
      ...(config.mqttPacketBytesMax !== undefined ? { limits: { packetBytesMax: config.mqttPacketBytesMax } } : {}),
    });
    const mqtt = await start('MQTT', config.mqttPort, (port) => startMqttServer(mqttOptions(port)));
    const mqtts = await start('MQTT TLS', config.mqttsPort, (port) => startMqttServer({ ...mqttOptions(port), tls }));
    // The WebSocket listeners' modules (the ws package) load only when one is on: ~0.1 s of every start otherwise.
    const webSocket = async (): Promise<typeof import('./protocols/mqtt/websocket-server.js')> => import('./protocols/mqtt/websocket-server.js');
    const ws = await start('MQTT WebSocket', config.wsPort, async (port) => (await webSocket()).startMqttWebSocketServer(mqttOptions(port)));
    const wss = await start('MQTT secure WebSocket', config.wssPort, async (port) => (await webSocket()).startMqttWebSocketServer({ ...mqttOptions(port), tls }));
    const amqpListeners: Array<AmqpServer | undefined> = [];
    const alarm = diskFreeAlarm(config, internals, logger, amqpListeners);
    const amqpOptions = (port: number): Parameters<typeof startAmqpServer>[0] => ({
      core: broker.amqp, host: config.bind, port, logger, users, connectionEvents: metrics, accessDenied: () => metrics.accessDenied('amqp'), publishAlarm: alarm,
    });
    const amqp = await start('AMQP', config.amqpPort, (port) => startAmqpServer(amqpOptions(port)));
    const amqps = await start('AMQP TLS', config.amqpsPort, (port) => startAmqpServer({ ...amqpOptions(port), tls }));
    const mqttListeners = [mqtt, mqtts, ws, wss];
    amqpListeners.push(amqp, amqps);
    if (alarm !== undefined) {
      stop.listener(() => Promise.resolve(alarm.stop()));
      await alarm.start();
    }
    const count = (listeners: ReadonlyArray<{ connections(): number } | undefined>): number => listeners.reduce((sum, listener) => sum + (listener?.connections() ?? 0), 0);
    const connections = (): Record<string, number> => ({ mqtt: count(mqttListeners), amqp: count(amqpListeners) });
    const clients = (): ManagedConnection[] => [
      ...mqttListeners.flatMap((listener): readonly ManagedConnection[] => listener?.list() ?? []),
      ...amqpListeners.flatMap((listener): readonly ManagedConnection[] => listener?.list() ?? []),
    ];
    if (config.sysIntervalSeconds > 0 && mqttListeners.some((listener) => listener !== undefined)) {
      const bytes = (): { received: number; sent: number } => mqttListeners.reduce((sum, listener) => {
        const counted = listener?.bytes() ?? { received: 0, sent: 0 };
        return { received: sum.received + counted.received, sent: sum.sent + counted.sent };
      }, { received: 0, sent: 0 });
      const sys = startSysTopics({ broker, version, totals: () => metrics.totals(), bytes }, config.sysIntervalSeconds);
      stop.listener(async () => sys.stop());
    }
    const address = (protocol: ListenerAddress['protocol'], listener: { port: number } | undefined): ListenerAddress[] => (listener ? [{ protocol, ipAddress: config.bind, port: listener.port }] : []);
    const listeners: ListenerAddress[] = [
      ...address('mqtt', mqtt), ...address('mqtt/ssl', mqtts), ...address('http/web-mqtt', ws), ...address('https/web-mqtt', wss),
      ...address('amqp', amqp), ...address('amqp/ssl', amqps),
    ];
    const httpOptions = (port: number): Parameters<typeof startHttpServer>[0] => ({
      broker, host: config.bind, port, logger, users, version, connections, metrics, clients, listeners, statsIntervalMs: config.statsIntervalMs,
      limits: { queryDocumentsExaminedMax: config.queryDocumentsExaminedMax },
    });
    const http = await start('HTTP', config.httpPort, (port) => startHttpServer(httpOptions(port)));
    const https = await start('HTTPS', config.httpsPort, (port) => startHttpServer({ ...httpOptions(port), tls }));
    // Every listener on has its own connection cap.
    const caps = (listenersOn: ReadonlyArray<object | undefined>, cap: number): number => listenersOn.filter((listener) => listener !== undefined).length * cap;
    checkDescriptorBudget({
      mqtt: caps(mqttListeners, defaultMqttLimits.connectionsMax),
      amqp: caps(amqpListeners, defaultAmqpLimits.connectionsMax),
      http: caps([http, https], defaultHttpLimits.connectionsMax),
    }, logger, currentOpenFilesLimit());
    // The log may have failed while the listeners were starting: they are closed now, and start-up fails.
    if (log.failed !== undefined) throw log.failed;
    const ports = {
      mqttPort: mqtt?.port, amqpPort: amqp?.port, httpPort: http?.port, mqttsPort: mqtts?.port, amqpsPort: amqps?.port,
      httpsPort: https?.port, wsPort: ws?.port, wssPort: wss?.port,
    };
    logger.info({ ...(log instanceof SegmentedLog ? { data: config.dataDir } : { stream: config.logAddress?.stream }), ...Object.fromEntries(Object.entries(ports).map(([name, port]) => [name.replace(/Port$/, ''), port ?? 'off'])) }, `Cairn ${version} ready`);
    if (log instanceof SegmentedLog) reportHistory(log, logger);
    return { broker, log, ...ports, reload: () => reload(acl, tls, logger), close: () => stop.close(), stopped: stop.stopped };
  } catch (error) {
    // Start-up failed: the caller gets this error, not a `stopped` it never saw.
    stop.stopped.catch(() => undefined);
    await stop.close().catch(() => undefined);
    throw error;
  }
}

/**
 * How a running Cairn stops, in order: listeners (newest first), then
 * waiting for what was committed, then the log (giving back the data
 * directory lock or the writer lease it holds), even when a listener failed to close.
 * Either by close() or, when the log fails, by failStop(): one fatal line,
 * the same closing without the wait, and `stopped` rejects.
 */
class Stopper {
  readonly stopped: Promise<void>;
  private readonly listeners: Array<() => Promise<void>> = [];
  private readonly drains: Array<() => Promise<void>> = [];
  private readonly finals: Array<() => Promise<void>> = [];
  private closing: Promise<void> | undefined;
  private settle!: { resolve: () => void; reject: (error: unknown) => void };

  constructor(private readonly logger: Logger) {
    this.stopped = new Promise<void>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
  }

  listener(close: () => Promise<void>): void {
    this.listeners.push(close);
  }

  beforeLog(drain: () => Promise<void>): void {
    this.drains.push(drain);
  }

  closeLast(close: () => Promise<void>): void {
    this.finals.push(close);
  }

  close(): Promise<void> {
    this.closing ??= this.closeAll(true).then(this.settle.resolve, (error: unknown) => {
      this.settle.resolve();
      throw error;
    });
    return this.closing;
  }

  failStop(error: LogFailedError): void {
    this.logger.fatal({ err: error, code: error.code }, `the log failed: ${error.message}; stopping (listeners closed, nothing more is acknowledged): restart to replay the log`);
    const timer = setTimeout(() => this.settle.reject(error), failStopCloseMs);
    timer.unref();
    this.closing ??= this.closeAll(false);
    this.closing.catch(() => undefined).finally(() => {
      clearTimeout(timer);
      this.settle.reject(error);
    });
  }

  private async closeAll(drain: boolean): Promise<void> {
    try {
      for (const close of this.listeners.reverse()) await close();
      if (drain) for (const wait of this.drains) await wait();
    } finally {
      // The log closes, and gives back the data directory lock or the writer lease, whatever happened before.
      for (const close of this.finals) await close();
    }
  }
}

async function reload(acl: AclFile | undefined, tls: TlsCredentials | undefined, logger: Logger): Promise<{ failures: string[] }> {
  const failures: string[] = [];
  const attempt = async (what: string, work: () => Promise<void>): Promise<void> => {
    try {
      await work();
      logger.info(`${what} reloaded`);
    } catch (error: unknown) {
      const reason = error instanceof Error ? error.message : String(error);
      failures.push(reason);
      logger.error({ reason }, `${what} not reloaded, the previous one stays in force: ${reason}`);
    }
  };
  if (acl !== undefined) await attempt(`ACL file ${acl.path}`, () => acl.reload());
  if (tls !== undefined) await attempt('TLS certificate and key', () => tls.reload());
  return { failures };
}

/** A listener that could not start: `AMQP listener: 127.0.0.1:5672 already in use`. */
export class ListenerError extends Error {
  override readonly name = 'ListenerError';
  readonly code = 'ELISTEN';
}

const listenFailures: Readonly<Record<string, string>> = {
  EADDRINUSE: 'already in use',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'address not available on this machine',
  ENOTFOUND: 'unknown host name',
};

/** Start a listener unless it is off (no port), naming it and its address when the operating system refuses the bind. */
async function listening<T>(name: string, host: string, port: number | undefined, start: (port: number) => Promise<T>): Promise<T | undefined> {
  if (port === undefined) return undefined;
  try {
    return await start(port);
  } catch (error: unknown) {
    const reason = listenFailures[(error as NodeJS.ErrnoException).code ?? ''];
    if (reason === undefined) throw error;
    throw new ListenerError(`${name} listener: ${host.includes(':') ? `[${host}]` : host}:${port} ${reason}`);
  }
}

function reportRecovery(broker: Broker, config: ServeConfig, logger: Logger): void {
  const r = broker.recovery!;
  logger.info({ snapshotLsn: r.snapshotLsn, records: r.recordsReplayed, ms: Math.round(r.replayMs), nextLsn: broker.log.nextLsn }, `log replayed: ${r.recordsReplayed} records after snapshot LSN ${r.snapshotLsn} in ${Math.round(r.replayMs)} ms`);
  logger.info(`MQTT persistence on - recovered ${r.sessions} sessions, ${r.pendingMessages} pending messages`);
  logger.info(`AMQP recovered ${r.durableQueues} durable queues, ${r.queuedMessages} messages`);
  if (config.ingestRoutes.length > 0) logger.info({ routes: config.ingestRoutes }, `MQTT ingest bridge on - ${config.ingestRoutes.length} route(s)`);
}

/** Checks the log's history once the broker serves, and says what it found (the damage also shows in metrics and /api/overview). */
function reportHistory(log: SegmentedLog, logger: Logger): void {
  const historyLogger = logger.child({ component: 'log' });
  void log.checkHistory().then((status) => {
    const { state, segmentsChecked, damage, unrestorable, summary } = status;
    if (state === 'damaged') historyLogger.error({ damage, unrestorable }, `log history damaged: ${summary ?? ''}`);
    else if (state === 'failed') historyLogger.error({ segmentsChecked }, summary ?? 'the history check failed');
    else if (state === 'intact' && segmentsChecked > 0) historyLogger.info({ segmentsChecked }, `log history verified: ${segmentsChecked} segment(s) before the newest snapshot are intact`);
  });
}
