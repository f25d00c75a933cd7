/**
 * The composition root: open the log, replay it into the broker, start the
 * MQTT, AMQP and HTTP listeners, and report what was recovered — one log
 * line each, as an operator reads them after a crash. Also the library entry
 * point for embedding Cairn in a Node program (see src/index.ts).
 */
import { loadUsersFile, anonymousUsers, type Users } from './auth/users.js';
import type { ServeConfig } from './config.js';
import { Broker } from './core/broker.js';
import type { ListenerAddress } from './http/management/resources.js';
import { startHttpServer } from './http/server.js';
import { SegmentedLog } from './log/index.js';
import type { Logger } from './logger.js';
import { Metrics } from './metrics.js';
import { startAmqpServer } from './protocols/amqp/server.js';
import type { ManagedConnection } from './protocols/connection-description.js';
import { startMqttServer } from './protocols/mqtt/server.js';
import { version } from './version.js';

export interface RunningCairn {
  readonly broker: Broker;
  readonly log: SegmentedLog;
  readonly mqttPort: number | undefined;
  readonly amqpPort: number | undefined;
  readonly httpPort: number | undefined;
  /** Stop the listeners, wait for in-flight appends, close the log. */
  close(): Promise<void>;
}

export async function startCairn(config: ServeConfig, logger: Logger): Promise<RunningCairn> {
  const users: Users = config.usersFile ? await loadUsersFile(config.usersFile) : anonymousUsers;
  const metrics = new Metrics();
  const log = await SegmentedLog.open({
    dir: config.dataDir,
    onSync: (seconds, records) => metrics.fsync(seconds, records),
    segmentBytesMax: config.segmentBytesMax,
    logger: logger.child({ component: 'log' }),
    ...(config.archiveDir !== undefined ? { archiveDir: config.archiveDir } : {}),
    ...(config.retentionBytes !== undefined ? { retentionBytes: config.retentionBytes } : {}),
    ...(config.retentionMs !== undefined ? { retentionMs: config.retentionMs } : {}),
  });
  const broker = Broker.open({
    log,
    logger: logger.child({ component: 'core' }),
    observer: metrics,
    ingestRoutes: config.ingestRoutes,
    limits: { snapshotEveryRecords: config.snapshotEveryRecords, sessionQueueMessagesMax: config.sessionQueueMessagesMax, queueReadyMessagesMax: config.queueReadyMessagesMax },
  });
  reportRecovery(broker, config, logger);
  const closers: Array<() => Promise<void>> = [];
  try {
    const mqtt = config.mqttPort === undefined ? undefined : await startMqttServer({
      core: broker.mqtt, host: config.bind, port: config.mqttPort, logger, users, connectionEvents: metrics,
      ...(config.mqttPacketBytesMax !== undefined ? { limits: { packetBytesMax: config.mqttPacketBytesMax } } : {}),
    });
    if (mqtt) closers.push(() => mqtt.close());
    const amqp = config.amqpPort === undefined ? undefined : await startAmqpServer({ core: broker.amqp, host: config.bind, port: config.amqpPort, logger, users, connectionEvents: metrics });
    if (amqp) closers.push(() => amqp.close());
    const connections = (): Record<string, number> => ({ mqtt: mqtt?.connections() ?? 0, amqp: amqp?.connections() ?? 0 });
    const clients = (): ManagedConnection[] => [...(mqtt?.list() ?? []), ...(amqp?.list() ?? [])];
    const listeners: ListenerAddress[] = [
      ...(mqtt ? [{ protocol: 'mqtt' as const, ipAddress: config.bind, port: mqtt.port }] : []),
      ...(amqp ? [{ protocol: 'amqp' as const, ipAddress: config.bind, port: amqp.port }] : []),
    ];
    const http = config.httpPort === undefined ? undefined : await startHttpServer({ broker, host: config.bind, port: config.httpPort, logger, users, version, connections, metrics, clients, listeners });
    if (http) closers.push(() => http.close());
    logger.info({ data: config.dataDir, mqtt: mqtt?.port ?? 'off', amqp: amqp?.port ?? 'off', http: http?.port ?? 'off' }, `Cairn ${version} ready`);
    return {
      broker, log, mqttPort: mqtt?.port, amqpPort: amqp?.port, httpPort: http?.port,
      close: async () => {
        for (const close of closers.reverse()) await close();
        await broker.flush();
        await log.close();
      },
    };
  } catch (error) {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await log.close().catch(() => undefined);
    throw error;
  }
}

function reportRecovery(broker: Broker, config: ServeConfig, logger: Logger): void {
  const r = broker.recovery!;
  logger.info({ snapshotLsn: r.snapshotLsn, records: r.recordsReplayed, ms: Math.round(r.replayMs), nextLsn: broker.log.nextLsn }, `log replayed: ${r.recordsReplayed} records after snapshot LSN ${r.snapshotLsn} in ${Math.round(r.replayMs)} ms`);
  logger.info(`MQTT persistence on - recovered ${r.sessions} sessions, ${r.pendingMessages} pending messages`);
  logger.info(`AMQP recovered ${r.durableQueues} durable queues, ${r.queuedMessages} messages`);
  if (config.ingestRoutes.length > 0) logger.info({ routes: config.ingestRoutes }, `MQTT ingest bridge on - ${config.ingestRoutes.length} route(s)`);
}
