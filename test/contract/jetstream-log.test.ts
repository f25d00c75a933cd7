/**
 * The log contract (log-contract.ts) on the JetStream log (src/log/jetstream/), on a real three-node
 * nats-server cluster started for this file (tools/nats-cluster.ts): every log gets a stream of its own (R3).
 * Segments and torn tails do not apply (JetStream stores and replicates the messages); retention does
 * (stream purge). A failed durability step is the real one: another writer's message takes the sequence
 * this log expects, so its next publish is refused.
 */
import { describe } from 'vitest';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { JetStreamLog } from '../../src/log/jetstream/jetstream-log.js';
import { useNatsCluster } from '../support/nats-cluster-hooks.js';
import { logContract, type LogFactory, type LogHandle } from './log-contract.js';

const nats = useNatsCluster();
let streams = 0;

async function removeStream(stream: string): Promise<void> {
  const manager = await jetstreamManager(nats.connection);
  for (const name of [stream, `OBJ_${stream}-snapshots`]) await manager.streams.delete(name).catch(() => undefined);
}

export const jetStreamLogFactory: LogFactory = {
  capabilities: { segments: false, tornTails: false, retention: true },
  async create(): Promise<LogHandle> {
    const stream = `contract-${process.pid}-${++streams}`;
    const open = (): Promise<JetStreamLog> => JetStreamLog.open({ address: { servers: nats.cluster.servers.split(','), stream, tls: false } });
    let log = await open();
    return {
      get log() {
        return log;
      },
      async reopen() {
        await log.close();
        log = await open();
        return log;
      },
      async failNextSync() {
        // Another writer takes the sequence this log's next append expects to follow.
        await jetstream(nats.connection).publish(`${stream}.log`, new Uint8Array(0));
      },
      async destroy() {
        await log.close();
        await removeStream(stream);
      },
    };
  },
};

describe('the log contract: JetStreamLog', () => logContract(jetStreamLogFactory));
