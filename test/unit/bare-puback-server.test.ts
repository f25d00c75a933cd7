/**
 * tools/bare-puback-server.ts, the floor bench.js mqtt measures beside the
 * brokers: in both read modes it answers a real MQTT.js client's CONNECT,
 * QoS 1 PUBLISHes (each with the PUBACK of its own packet id, also when a
 * packet arrives split across reads) and PINGREQ; a durable one has each
 * PUBLISH in its file by the time the PUBACK arrives.
 */
import { readFileSync } from 'node:fs';
import { connect as connectTcp } from 'node:net';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { afterEach, describe, expect, it } from 'vitest';
import { startBarePubackServer } from '../../tools/bare-puback-server.js';
import { tempDirectory, until } from '../support/kit.js';

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
    const socket = connectTcp(server.port, '127.0.0.1');
    socket.setNoDelay(true);
    const received: number[] = [];
    socket.on('data', (chunk: Buffer) => received.push(...chunk));
    cleanups.push(() => { socket.destroy(); server.close(); });
    const connectPacket = Buffer.from([0x10, 0x0d, 0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3c, 0x00, 0x01, 0x62]);
    socket.write(connectPacket);
    await until(() => received.length >= 4, 'CONNACK');
    // PUBLISH QoS 1, topic "t", packet id 0x1234, payload "x": written in two parts, the split inside the remaining length's header.
    const publish = Buffer.from([0x32, 0x06, 0x00, 0x01, 0x74, 0x12, 0x34, 0x78]);
    socket.write(publish.subarray(0, 1));
    await new Promise((resolve) => setImmediate(resolve));
    socket.write(publish.subarray(1));
    socket.write(Buffer.from([0xc0, 0x00]));
    await until(() => received.length >= 10, 'PUBACK and PINGRESP');
    expect(received).toEqual([0x20, 0x02, 0x00, 0x00, 0x40, 0x02, 0x12, 0x34, 0xd0, 0x00]);
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
