/**
 * tools/bare-puback-server.c, the C floor bench.js mqtt measures beside the
 * brokers and the Node floor: compiled with this machine's `cc` as the bench
 * compiles it (warning-free), it answers a real MQTT.js client's CONNECT,
 * QoS 1 PUBLISHes (each with its own packet id's PUBACK, also a packet larger
 * than one read and one split across writes) and PINGREQ; a durable one has
 * each PUBLISH in its file by the time the PUBACK arrives, with two clients at
 * once. Without `cc` this fails and says how to install it (npm test installs
 * it: tools/install-test-packages.sh).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { compileBareCServer, startBareServerProcess } from '../../tools/bare-server-process.js';
import { splitPublishAnswer, splitPublishExchange } from '../support/bare-puback-exchange.js';
import { tempDirectory, until } from '../support/kit.js';

const buildDir = tempDirectory('bare-c-server-');
let binary = '';
beforeAll(() => {
  const build = compileBareCServer(buildDir.path);
  if ('notMeasured' in build) throw new Error(`the C floor does not compile here: ${build.notMeasured}`);
  expect(build.warnings).toBe('');
  binary = build.binary;
});
afterAll(() => buildDir.remove());

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startServer(...args: string[]): Promise<number> {
  const server = await startBareServerProcess(binary, args);
  cleanups.push(() => server.stop());
  return server.port;
}

async function connectClient(port: number, clientId: string, keepalive = 60): Promise<mqtt.MqttClient> {
  const client = await mqtt.connectAsync({ host: '127.0.0.1', port, reconnectPeriod: 0, clientId, keepalive });
  cleanups.push(() => { client.end(true); });
  return client;
}

describe('bare C PUBACK server', () => {
  it('acknowledges an MQTT.js client\'s QoS 1 publishes, one larger than a read, and answers its PINGREQ', async () => {
    const client = await connectClient(await startServer('nosub'), 'bare-c', 1);
    for (let i = 0; i < 20; i++) {
      const packet = await client.publishAsync(`bench/topic-${i}`, Buffer.alloc(i * 10, 1), { qos: 1 });
      expect(packet?.cmd).toBe('publish');
    }
    // 200 KiB: more than the server's first 64 KiB buffer, so it arrives in several reads and the buffer grows.
    expect((await client.publishAsync('bench/large', Buffer.alloc(200 * 1024, 2), { qos: 1 }))?.cmd).toBe('publish');
    let pingResponses = 0;
    client.on('packetreceive', (packet) => { if (packet.cmd === 'pingresp') pingResponses++; });
    // keepalive 1 s: MQTT.js sends a PINGREQ after a second without traffic, and ends the connection if unanswered.
    await until(() => pingResponses > 0, 'PINGRESP to MQTT.js\'s PINGREQ', 4_000);
    expect(client.connected).toBe(true);
  });

  it('answers a PUBLISH split across reads and a PINGREQ with the right packets', async () => {
    expect(await splitPublishExchange(await startServer('nosub'))).toEqual(splitPublishAnswer);
  });
});

describe('bare durable C PUBACK server', () => {
  it('has every QoS 1 PUBLISH in its file when the PUBACK arrives, from two clients at once', async () => {
    const dir = tempDirectory('bare-c-durable-');
    cleanups.push(() => dir.remove());
    const file = join(dir.path, 'publishes');
    const port = await startServer('durable', file);
    const clients = [await connectClient(port, 'bare-c-durable-a'), await connectClient(port, 'bare-c-durable-b')];
    await Promise.all(clients.map(async (client, c) => {
      for (let i = 0; i < 5; i++) {
        await client.publishAsync('bench/durable', `payload-${c}-${i}`, { qos: 1 });
        expect(readFileSync(file).toString('latin1')).toContain(`payload-${c}-${i}`);
      }
    }));
    // Ten PUBLISH packets, nothing else and nothing overwritten: type byte, remaining length, topic, packet id, payload.
    const packetBytes = 1 + 1 + (2 + 'bench/durable'.length) + 2 + 'payload-0-0'.length;
    expect(readFileSync(file).length).toBe(10 * packetBytes);
  });
});
