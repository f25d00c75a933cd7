/**
 * A delayed MQTT 5 will across kill -9 [MQTT-3.1.3-9]: the broker runs as a
 * child process (`cairn serve`) and is killed with SIGKILL. A client with a
 * Will Delay Interval loses its connection; once its `session offline` record
 * (with the will) is durable the broker is killed before the delay passes.
 * `cairn inspect state` shows the pending will. The delay passes while the
 * broker is down; the restart publishes the will, and a persistent watcher
 * gets it exactly once; after further kills and restarts the log holds one
 * publication of it. The delay is real time here (the broker's own clock),
 * so the test waits it out.
 */
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { expect, it } from 'vitest';
import { untilDurable } from '../support/broker-log-position.js';
import { runCairnCommand, startMqttBroker, tempDataDir, useCleanups, type BrokerProcess } from '../support/broker-process.js';
import { until } from '../support/kit.js';

const cleanups = useCleanups();
const broker = (dir: string): Promise<BrokerProcess> => startMqttBroker(dir, cleanups);

async function open(port: number, clientId: string, options: IClientOptions, payloads?: string[]): Promise<MqttClient> {
  const client = mqtt.connect({ host: '127.0.0.1', port, clientId, protocolVersion: 5, reconnectPeriod: 0, ...options });
  if (payloads) client.on('message', (_topic, payload) => payloads.push(payload.toString()));
  cleanups.push(() => new Promise<void>((done) => client.end(true, {}, () => done())));
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject);
  });
  return client;
}

/** The msg records of the will's topic: one per publication. */
async function willPublications(dir: string): Promise<number> {
  const result = await runCairnCommand(['inspect', 'records', '--data', dir, '--json', '--kind', 'msg', '--topic', 'wills/owner']);
  expect(result.code).toBe(0);
  return result.stdout.trim().split('\n').filter((line) => line.length > 0).length;
}

/** Long enough that the kill comes before it on a loaded machine, short enough to wait out. */
const willDelaySeconds = 10;
const watcherOptions: IClientOptions = { clean: false, properties: { sessionExpiryInterval: 3600 } };

it('a delayed will pending at kill -9 is shown by inspect and published exactly once after the restart', async () => {
  const data = tempDataDir();
  cleanups.push(() => data.remove());
  let running = await broker(data.dir);

  const watcher = await open(running.mqttPort, 'watcher', watcherOptions);
  await watcher.subscribeAsync('wills/#', { qos: 1 });
  await new Promise<void>((resolve) => watcher.end(false, {}, () => resolve()));
  const owner = await open(running.mqttPort, 'owner', {
    clean: false,
    properties: { sessionExpiryInterval: 3600 },
    will: { topic: 'wills/owner', payload: Buffer.from('owner gone'), qos: 1, retain: false, properties: { willDelayInterval: willDelaySeconds, contentType: 'text/plain' } },
  });
  const lostAt = Date.now();
  (owner as unknown as { stream: { destroy(): void } }).stream.destroy();
  await until(async () => {
    const result = await runCairnCommand(['inspect', 'records', '--data', data.dir, '--kind', 'session', '--client', 'owner']);
    return result.stdout.includes('offline') && result.stdout.includes('will=wills/owner');
  }, 'the offline record with the will');
  await untilDurable(running, 'the offline record');
  await running.kill();
  expect(Date.now() - lostAt).toBeLessThan(willDelaySeconds * 1000); // else the will went out before the kill: the test proves nothing
  expect(await willPublications(data.dir)).toBe(0);
  const state = await runCairnCommand(['inspect', 'state', '--data', data.dir]);
  expect(state.stdout).toMatch(/owner .*pending will: topic wills\/owner qos 1/);

  await until(() => Date.now() - lostAt > willDelaySeconds * 1000 + 200, 'the will delay to pass while the broker is down', 15_000);
  running = await broker(data.dir);
  await until(async () => (await willPublications(data.dir)) === 1, 'the will published at the restart', 10_000);
  await untilDurable(running, 'the will');
  await running.kill();
  running = await broker(data.dir);
  await untilDurable(running, 'start-up records');
  await running.kill();
  running = await broker(data.dir);
  const payloads: string[] = [];
  await open(running.mqttPort, 'watcher', watcherOptions, payloads);
  await until(() => payloads.length === 1, 'the will queued for the watcher');
  const client = await open(running.mqttPort, 'marker', {});
  await client.publishAsync('wills/marker', 'marker', { qos: 1 });
  await until(() => payloads.length === 2, 'the marker after it');
  expect(payloads).toEqual(['owner gone', 'marker']);
  await untilDurable(running, 'the watcher');
  await running.kill();
  expect(await willPublications(data.dir)).toBe(1);
  const after = await runCairnCommand(['inspect', 'state', '--data', data.dir]);
  expect(after.stdout).not.toContain('pending will');
});
