/**
 * A three-node nats-server cluster (tools/nats-cluster.ts) for one test file, with a client connection to it:
 * started before the file's tests, stopped after them. Read the fields inside tests (set once started).
 */
import { afterAll, beforeAll } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startNatsCluster, type NatsCluster } from '../../tools/nats-cluster.js';

export interface ClusterForFile {
  cluster: NatsCluster;
  connection: NatsConnection;
}

export function useNatsCluster(): ClusterForFile {
  const started = {} as ClusterForFile;
  beforeAll(async () => {
    started.cluster = await startNatsCluster();
    started.connection = await connect({ servers: started.cluster.servers.split(',') });
  });
  afterAll(async () => {
    await started.connection?.close();
    await started.cluster?.stop();
  });
  return started;
}
