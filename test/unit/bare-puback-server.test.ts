/**
 * tools/bare-puback-server.ts, the floor bench.js mqtt measures beside the
 * brokers: in both read modes it answers a real MQTT.js client's CONNECT,
 * QoS 1 PUBLISHes (each with the PUBACK of its own packet id, also when a
 * packet arrives split across reads) and PINGREQ; a durable one has each
 * PUBLISH in its file by the time the PUBACK arrives.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { afterEach, describe, expect, it } from 'vitest';
import { startBarePubackServer } from '../../tools/bare-puback-server.js';
import { splitPublishAnswer, splitPublishExchange } from '../support/bare-puback-exchange.js';
import { tempDirectory } from '../support/kit.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

describe.each(['data', 'direct'] as const)('bare PUBACK server, %s reads', (mode) => {
  it('acknowledges an MQTT.js client\'s QoS 1 publishes', async () => {
    const server = await startBarePubackServer(mode);
    const client = await mqtt.connectAsync({ host: '127.0.0.1', port: server.port, reconnectPeriod: 0, clientId: 'bare' });
    cleanups.push(() => { client.end(true); server.close(); });
    for (let i = 0; i < 20; i++) {
      const packet = await client.publishAsync(`bench/topic-${i}`, Buffer.alloc(i * 10, 1), { qos: 1 });
      expect(packet?.cmd).toBe('publish');
    }
  });

  it('answers a PUBLISH split across reads and a PINGREQ with the right packets', async () => {
    const server = await startBarePubackServer(mode);
    cleanups.push(() => server.close());
    expect(await splitPublishExchange(server.port)).toEqual(splitPublishAnswer);
  });
});

describe('bare durable PUBACK server', () => {
  it('has every QoS 1 PUBLISH in its file when the PUBACK arrives', async () => {
    const dir = tempDirectory('bare-durable-');
    const file = join(dir.path, 'publishes');
    const server = await startBarePubackServer('direct', 0, file);
    const client = await mqtt.connectAsync({ host: '127.0.0.1', port: server.port, reconnectPeriod: 0, clientId: 'bare-durable' });
    cleanups.push(() => { client.end(true); server.close(); dir.remove(); });
    for (let i = 0; i < 5; i++) {
      await client.publishAsync('bench/durable', `payload-${i}`, { qos: 1 });
      expect(readFileSync(file).toString('latin1')).toContain(`payload-${i}`);
    }
  });

  it('refuses to be durable with stream writes', () => {
    expect(() => startBarePubackServer('data', 0, '/nonexistent/publishes')).toThrow(/reads and writes directly/);
  });
});
