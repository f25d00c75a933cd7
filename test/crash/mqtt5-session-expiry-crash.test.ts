/**
 * MQTT 5 session expiry across kill -9 [MQTT-3.1.2-23]: the broker runs as a
 * child process (`cairn serve`) and is killed with SIGKILL. A session whose
 * client left (its `offline` record durable) and whose interval passes while
 * the broker is down ends at the restart; one whose client was connected at
 * the kill counts as left at the restart and is still there within its
 * interval, with its queued message. After another kill and restart the log
 * holds exactly one `session end` for the expired session. The interval is
 * real time here (the broker's own clock), so the test waits it out.
 */
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import type { IConnackPacket } from 'mqtt-packet';
import { expect, it } from 'vitest';
import { untilDurable } from '../support/broker-log-position.js';
import { runCairnCommand, startMqttBroker, tempDataDir, useCleanups, type BrokerProcess } from '../support/broker-process.js';
import { until } from '../support/kit.js';

const cleanups = useCleanups();
const broker = (dir: string): Promise<BrokerProcess> => startMqttBroker(dir, cleanups);

async function open(port: number, clientId: string, options: IClientOptions, payloads?: string[]): Promise<{ client: MqttClient; sessionPresent: boolean }> {
  const client = mqtt.connect({ host: '127.0.0.1', port, clientId, protocolVersion: 5, reconnectPeriod: 0, ...options });
  if (payloads) client.on('message', (_topic, payload) => payloads.push(payload.toString()));
  cleanups.push(() => new Promise<void>((done) => client.end(true, {}, () => done())));
  const connack = await new Promise<IConnackPacket>((resolve, reject) => {
    client.once('connect', resolve);
    client.once('error', reject);
  });
  return { client, sessionPresent: connack.sessionPresent };
}

async function sessionOps(dir: string, clientId: string): Promise<string[]> {
  const result = await runCairnCommand(['inspect', 'records', '--data', dir, '--json', '--kind', 'session', '--client', clientId]);
  expect(result.code).toBe(0);
  return result.stdout.trim().split('\n').filter((line) => line.length > 0).map((line) => (JSON.parse(line) as { body: { op: string } }).body.op);
}

/** Long enough that the kill comes before it on a loaded machine, short enough to wait out. */
const expiringIntervalSeconds = 8;

it('a session ends once, at the restart after its interval; a session connected at the kill lives on from the restart', async () => {
  const data = tempDataDir();
  cleanups.push(() => data.remove());
  let running = await broker(data.dir);

  const expiring = await open(running.mqttPort, 'expiring', { clean: false, properties: { sessionExpiryInterval: expiringIntervalSeconds } });
  await expiring.client.subscribeAsync('expiry/#', { qos: 1 });
  const kept = await open(running.mqttPort, 'kept', { clean: false, properties: { sessionExpiryInterval: 3600 } });
  await kept.client.subscribeAsync('kept/#', { qos: 1 });
  await new Promise<void>((resolve) => expiring.client.end(false, {}, () => resolve()));
  kept.client.removeAllListeners('message');
  kept.client.end(true); // no DISCONNECT reaches the broker before the kill: it still thinks the client is connected
  const publisher = await open(running.mqttPort, 'publisher', {});
  await publisher.client.publishAsync('kept/a', 'waiting', { qos: 1 });
  await untilDurable(running, 'the offline record and the queued message');
  await running.kill();
  expect(await sessionOps(data.dir, 'expiring')).toEqual(['open', 'offline']);

  // The broker is down longer than the interval: the session's time passes while nothing runs.
  const downSince = Date.now();
  await until(() => Date.now() - downSince > expiringIntervalSeconds * 1000 + 200, 'the expiry interval to pass while the broker is down', 15_000);
  running = await broker(data.dir);
  await until(async () => (await sessionOps(data.dir, 'expiring')).includes('end'), 'the end record', 10_000).catch(() => undefined);

  const expiredAgain = await open(running.mqttPort, 'expiring', { clean: false, properties: { sessionExpiryInterval: expiringIntervalSeconds } });
  expect(expiredAgain.sessionPresent).toBe(false);
  const keptPayloads: string[] = [];
  const keptAgain = await open(running.mqttPort, 'kept', { clean: false, properties: { sessionExpiryInterval: 3600 } }, keptPayloads);
  expect(keptAgain.sessionPresent).toBe(true);
  await until(() => keptPayloads.length === 1, 'the message queued for the kept session');
  expect(keptPayloads).toEqual(['waiting']);

  await untilDurable(running, 'the reconnects');
  await running.kill();
  running = await broker(data.dir);
  await untilDurable(running, 'start-up records');
  await running.kill();
  const ops = await sessionOps(data.dir, 'expiring');
  expect(ops.filter((op) => op === 'end')).toHaveLength(1);
  expect(ops.slice(0, 3)).toEqual(['open', 'offline', 'end']);
});
