/**
 * MQTT over WebSocket with MQTT.js (ws:// and wss://): the same sessions as
 * TCP — a persistent session made over WebSocket gets, after reconnecting,
 * the QoS 1 messages a TCP client published meanwhile, and the other way
 * round; the upgrade needs the path /mqtt and the subprotocol mqtt
 * [MQTT-6.0.0-3]; a text frame closes the connection [MQTT-6.0.0-1]; one
 * binary frame may carry several packets and a packet may span frames.
 */
import { once } from 'node:events';
import { generate } from 'mqtt-packet';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { makeTestCertificates, type TestCertificates } from '../support/certificates.js';
import { collectMessages, startEdgeBroker, type EdgeBroker } from '../support/edge-broker.js';
import { tempDirectory, until } from '../support/kit.js';

let broker: EdgeBroker | undefined;
afterEach(async () => {
  await broker?.close();
  broker = undefined;
});

async function start(extra: readonly string[] = []): Promise<EdgeBroker> {
  broker = await startEdgeBroker(() => ['--ws-port', '0', ...extra]);
  return broker;
}

const wsUrl = (): string => `ws://127.0.0.1:${broker!.running.wsPort!}/mqtt`;
const tcpUrl = (): string => `mqtt://127.0.0.1:${broker!.running.mqttPort!}`;

describe('MQTT over ws://', () => {
  it('publishes and subscribes with MQTT.js, QoS 0, 1 and 2', async () => {
    await start();
    const { client: subscriber } = await broker!.connect(wsUrl(), { clientId: 'ws-sub' });
    const lines = collectMessages(subscriber);
    await subscriber.subscribeAsync('ws/#', { qos: 2 });
    const { client: publisher } = await broker!.connect(wsUrl(), { clientId: 'ws-pub' });
    for (const qos of [0, 1, 2] as const) await publisher.publishAsync(`ws/q${qos}`, `qos ${qos}`, { qos });
    await until(() => lines.length === 3, 'three messages over WebSocket');
    expect(lines).toEqual(['ws/q0 qos 0', 'ws/q1 qos 1', 'ws/q2 qos 2']);
  });

  it('a persistent session made over WebSocket gets what a TCP client published while it was away, and back', async () => {
    await start();
    const first = await broker!.connect(wsUrl(), { clientId: 'roamer', clean: false });
    expect(first.connack.sessionPresent).toBe(false);
    await first.client.subscribeAsync('roam/#', { qos: 1 });
    await first.client.endAsync();

    const { client: tcpPublisher } = await broker!.connect(tcpUrl(), { clientId: 'tcp-pub' });
    await tcpPublisher.publishAsync('roam/1', 'while away', { qos: 1 });

    // Back over TCP this time: the session is one, whatever the transport.
    const second = await broker!.connect(tcpUrl(), { clientId: 'roamer', clean: false });
    expect(second.connack.sessionPresent).toBe(true);
    const lines = second.lines;
    await until(() => lines.length === 1, 'the queued message after reconnecting over TCP');
    expect(lines).toEqual(['roam/1 while away']);
    await second.client.endAsync();

    const { client: wsPublisher } = await broker!.connect(wsUrl(), { clientId: 'ws-pub' });
    await wsPublisher.publishAsync('roam/2', 'from ws', { qos: 1 });
    const third = await broker!.connect(wsUrl(), { clientId: 'roamer', clean: false });
    expect(third.connack.sessionPresent).toBe(true);
    const later = third.lines;
    await until(() => later.length === 1, 'the queued message after reconnecting over WebSocket');
    expect(later).toEqual(['roam/2 from ws']);
  });

  it('a second CONNECT over WebSocket takes over a TCP connection of the same client id [MQTT-3.1.4-2]', async () => {
    await start();
    const { client: tcp } = await broker!.connect(tcpUrl(), { clientId: 'twice' });
    const closed = new Promise<void>((resolve) => tcp.once('close', () => resolve()));
    await broker!.connect(wsUrl(), { clientId: 'twice' });
    await closed;
  });

  it('refuses an upgrade on another path (404) or without the subprotocol mqtt (400) [MQTT-6.0.0-3]', async () => {
    await start();
    const refusal = async (url: string, protocols: string[]): Promise<number> => {
      const socket = new WebSocket(url, protocols);
      socket.on('error', () => undefined); // the refusal also surfaces as an error once terminated
      const [, response] = (await once(socket, 'unexpected-response')) as [unknown, { statusCode: number }];
      socket.terminate();
      return response.statusCode;
    };
    expect(await refusal(`ws://127.0.0.1:${broker!.running.wsPort!}/other`, ['mqtt'])).toBe(404);
    expect(await refusal(wsUrl(), ['chat'])).toBe(400);
  });

  it('closes the connection on a text frame [MQTT-6.0.0-1]; accepts packets split across and packed into frames', async () => {
    await start();
    const raw = new WebSocket(wsUrl(), ['mqtt']);
    await once(raw, 'open');
    expect(raw.protocol).toBe('mqtt');
    const connect = generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clientId: 'raw-ws', clean: true, keepalive: 0 });
    const ping = generate({ cmd: 'pingreq' });
    const received: Buffer[] = [];
    raw.on('message', (data: Buffer) => received.push(data));
    // CONNECT split over two frames, then PINGREQ twice in one frame.
    raw.send(connect.subarray(0, 5));
    raw.send(Buffer.concat([connect.subarray(5), ping, ping]));
    await until(() => Buffer.concat(received).length === 4 + 2 + 2, 'CONNACK and two PINGRESPs');
    expect(Buffer.concat(received)).toEqual(Buffer.from([0x20, 0x02, 0x00, 0x00, 0xd0, 0x00, 0xd0, 0x00]));
    const closed = once(raw, 'close');
    raw.send('text is not MQTT');
    const [code] = (await closed) as [number];
    expect(code).toBe(1003);
  });
});

describe('MQTT over wss://', () => {
  let certificates: TestCertificates;
  let dir: { path: string; remove(): void };
  beforeAll(() => {
    dir = tempDirectory('cairn-wss-certs-');
    certificates = makeTestCertificates(dir.path);
  });
  afterAll(() => dir.remove());

  it('QoS 1 between a wss:// client and a TCP client, with the CA', async () => {
    await start(['--tls-cert', certificates.server.cert, '--tls-key', certificates.server.key, '--wss-port', '0', '--mqtts-port', 'off', '--amqps-port', 'off', '--https-port', 'off']);
    const wssUrl = `wss://127.0.0.1:${broker!.running.wssPort!}/mqtt`;
    const { client: subscriber } = await broker!.connect(wssUrl, { clientId: 'wss-sub', ca: certificates.ca });
    const lines = collectMessages(subscriber);
    await subscriber.subscribeAsync('secure/#', { qos: 1 });
    const { client: publisher } = await broker!.connect(tcpUrl(), { clientId: 'tcp-pub' });
    await publisher.publishAsync('secure/a', 'to wss', { qos: 1 });
    await until(() => lines.length === 1, 'the wss subscriber got the TCP publish');
    expect(lines).toEqual(['secure/a to wss']);
    // And nothing without the CA: the server's certificate does not verify.
    await expect(broker!.connect(wssUrl, { clientId: 'no-ca' })).rejects.toThrow();
  });
});
