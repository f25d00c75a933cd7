/**
 * `cairn serve --log nats://…`: the JetStream log as served-log.ts describes
 * it, in a module of its own so that only a broker on JetStream loads the
 * NATS client.
 */
import { hostname } from 'node:os';
import { JetStreamLog } from './log/jetstream/jetstream-log.js';
import { connectToNats } from './log/jetstream/nats-connection.js';
import { StandbyTail } from './log/jetstream/standby-tail.js';
import { WriterLease } from './log/jetstream/writer-lease.js';
import type { OpenedLog, ServedLogOptions } from './served-log.js';

/** Waits (as a standby) for the stream's writer lease, then opens the JetStream log with a fence. */
export async function openJetStreamServedLog({ config, logger, onFailed }: ServedLogOptions): Promise<OpenedLog> {
  const address = config.logAddress!;
  const logLogger = logger.child({ component: 'log' });
  const connection = await connectToNats(address, { credsFile: config.natsCredsFile, name: `cairn ${hostname()}:${process.pid}` });
  let lease: WriterLease | undefined;
  let tail: StandbyTail | undefined;
  try {
    let log: JetStreamLog | undefined;
    let standbySince: number | undefined;
    lease = await WriterLease.acquire({
      connection, stream: address.stream, holder: `${hostname()}:${process.pid}`, ttlMs: config.leaseTtlMs, replicas: config.natsReplicas, logger: logLogger,
      onWaiting: (heldBy) => {
        if (standbySince !== undefined) return;
        standbySince = performance.now();
        logger.info({ stream: address.stream, heldBy, leaseTtlMs: config.leaseTtlMs }, 'standby: another node writes the log; waiting for its writer lease to expire');
        tail = StandbyTail.start(connection, address.stream, logLogger);
      },
      onLost: (reason) => log?.fail(`this node no longer writes the log: ${reason}`, undefined, 'EDEPOSED'),
    });
    const opening = performance.now();
    const warm = await tail?.stop();
    log = await JetStreamLog.open({ address, connection, fence: true, replicas: config.natsReplicas, logger: logLogger, onFailed, ...(warm !== undefined ? { heldFrames: warm.frames } : {}) });
    logger.info({
      stream: address.stream, nextLsn: log.nextLsn, readMs: Math.round(performance.now() - opening), standbyMs: standbySince === undefined ? 0 : Math.round(performance.now() - standbySince),
      warm: warm === undefined ? false : { appliedWhileWaiting: warm.applied, stateLsn: warm.state.lastLsn },
    }, 'took the writer lease: this node writes the log');
    const [opened, held] = [log, lease];
    return {
      log: opened,
      ...(warm !== undefined ? { warm: { state: warm.state, replay: warm.replay, nextLsn: warm.nextLsn, snapshotLsn: warm.snapshot?.lsn ?? 0 } } : {}),
      close: async () => {
        await opened.close();
        await held.release();
        await connection.close();
      },
    };
  } catch (error) {
    lease?.stop();
    await tail?.stop();
    await connection.close();
    throw error;
  }
}
