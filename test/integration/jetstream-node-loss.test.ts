/**
 * The JetStream log across the loss of a nats-server node (issue 17): the node
 * this log's connection talks to is killed (SIGKILL) while records are being
 * appended, pipelined, and started again. The client reconnects to another
 * node, the log resends what was not acknowledged (same message ids: what the
 * stream already holds comes back as a duplicate), every append resolves, the
 * log does not fail, and the stream holds every record exactly once, in order.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { JetStreamLog } from '../../src/log/jetstream/jetstream-log.js';
import { startNatsCluster, type NatsCluster } from '../../tools/nats-cluster.js';
import { until } from '../support/kit.js';

let cluster: NatsCluster;

beforeAll(async () => {
  cluster = await startNatsCluster();
});

afterAll(async () => {
  await cluster?.stop();
});

describe('the JetStream log when a nats-server node dies', () => {
  it('resends what was not acknowledged: every append resolves and every record is stored once, in order', async () => {
    const servers = cluster.servers.split(',');
    const connection: NatsConnection = await connect({ servers, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    const log = await JetStreamLog.open({ address: { servers, stream: 'node-loss', tls: false }, connection, publishTimeoutMs: 20_000 });
    const appended: Array<Promise<number[]>> = [];
    const append = (n: number): void => void appended.push(log.append([{ kind: 5, timestamp: n, body: { n } }]));
    for (let n = 1; n <= 300; n++) append(n);
    await appended.at(-1);

    const connectedTo = cluster.nodes.findIndex((node) => node.name === connection.info?.server_name);
    expect(connectedTo).toBeGreaterThanOrEqual(0);
    for (let n = 301; n <= 600; n++) append(n);
    await cluster.kill(connectedTo);
    for (let n = 601; n <= 1000; n++) {
      append(n);
      if (n % 50 === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const lsns = (await Promise.all(appended)).flat();
    expect(log.failed).toBeUndefined();
    expect(lsns).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    await cluster.start(connectedTo);

    const reader = await JetStreamLog.open({ address: { servers, stream: 'node-loss', tls: false }, connection });
    const stored = [...reader.read()].map((record) => ({ lsn: record.lsn, n: (record.body as { n: number }).n }));
    expect(stored).toEqual(Array.from({ length: 1000 }, (_, i) => ({ lsn: i + 1, n: i + 1 })));
    await until(() => reader.nextLsn === 1001, 'the reader to hold the whole stream');
    await log.close();
    await connection.close();
  });
});
