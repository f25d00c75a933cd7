/**
 * `cairn recover --from … --to nats://host:4222/newstream`: the recovered
 * state goes into a new JetStream log instead of a data directory. The
 * records keep their LSNs: a stream's LSNs are independent of its sequences,
 * so the new stream's first message starts at the first LSN copied; the
 * snapshot goes into its bucket. The stream must not exist. While it is
 * written, this run holds the new stream's writer lease, so a broker started
 * on it meanwhile waits as a standby instead of appending to a half-made log
 * (its first write, after the lease is released, is a fence, as at any
 * takeover); the lease bucket is deleted at the end, so the first broker
 * makes it with its own --lease-ttl. A run that fails deletes the stream and
 * the buckets it made.
 */
import { hostname } from 'node:os';
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { JetStreamLog } from '../log/jetstream/jetstream-log.js';
import { parseJetStreamAddress, type JetStreamAddress } from '../log/jetstream/jetstream-address.js';
import { connectToNats, type NatsConnection } from '../log/jetstream/nats-connection.js';
import { WriterLease } from '../log/jetstream/writer-lease.js';
import { LogError } from '../log/index.js';
import { UsageError } from './args.js';
import type { CopiedRecords, RecoverPlan } from './recover.js';

const replicasMax = 5;

/** Writes `plan` into the new stream at `location`; what was copied. */
export async function recoverIntoStream(location: string, replicas: number, plan: RecoverPlan): Promise<CopiedRecords> {
  if (replicas > replicasMax) throw new UsageError(`--nats-replicas is 1..${replicasMax}, got ${replicas}`);
  const address = addressOf(location);
  const connection = await connectToNats(address, { credsFile: process.env['CAIRN_NATS_CREDS'], name: 'cairn recover' });
  try {
    const manager = await jetstreamManager(connection);
    if (await streamExists(manager, address.stream)) throw new UsageError(`--to ${location}: stream ${address.stream} exists; give a new stream`);
    const lease = await WriterLease.tryAcquire({ connection, stream: address.stream, holder: `cairn recover ${hostname()}:${process.pid}`, replicas });
    if (!(lease instanceof WriterLease)) throw new UsageError(`--to ${location}: ${lease.heldBy} holds the writer lease of stream ${address.stream}`);
    let copied: CopiedRecords;
    try {
      copied = await writeStream(address, connection, replicas, plan);
    } catch (error) {
      // A half-made stream must not pass for a recovered one.
      await lease.release();
      await removeStream(manager, address.stream);
      if (error instanceof LogError) throw new LogError(error.code, `${error.message}; stream ${address.stream} was removed`, { cause: error });
      throw error;
    }
    await lease.release();
    // A broker creates the lease bucket again with its own --lease-ttl (an existing bucket keeps the TTL it was made with).
    await manager.streams.delete(leaseBucketOf(address.stream)).catch(() => undefined);
    return copied;
  } finally {
    await connection.close();
  }
}

async function writeStream(address: JetStreamAddress, connection: NatsConnection, replicas: number, plan: RecoverPlan): Promise<CopiedRecords> {
  const log = await JetStreamLog.open({ address, connection, replicas, firstLsn: plan.copyFrom });
  try {
    if (plan.emptyState !== undefined) await log.writeSnapshot(plan.emptyState.lsn, plan.emptyState.data);
    const copied = await plan.copy(log);
    if (plan.snapshot !== undefined) await log.writeSnapshot(plan.snapshot.lsn, plan.snapshot.data);
    return copied;
  } finally {
    await log.close();
  }
}

function leaseBucketOf(stream: string): string {
  return `KV_${stream}-writer`;
}

function addressOf(location: string): JetStreamAddress {
  try {
    return parseJetStreamAddress(location);
  } catch (error) {
    throw new UsageError(`--to ${location}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

async function streamExists(manager: JetStreamManager, stream: string): Promise<boolean> {
  try {
    await manager.streams.info(stream);
    return true;
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) return false;
    throw error;
  }
}

/** The stream, its snapshot bucket and its lease bucket. */
async function removeStream(manager: JetStreamManager, stream: string): Promise<void> {
  for (const name of [stream, `OBJ_${stream}-snapshots`, leaseBucketOf(stream)]) await manager.streams.delete(name).catch(() => undefined);
}
