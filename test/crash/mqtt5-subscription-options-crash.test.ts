/**
 * MQTT 5 subscription options across kill -9: the broker runs as a child
 * process (`cairn serve`, snapshots every 5 records so the options also pass
 * through a snapshot) and is killed with SIGKILL right after the SUBACKs. Its
 * log then shows the options (`cairn inspect records` and `inspect state`),
 * and after the restart the persistent session still has them: No Local
 * keeps the client's own message from it, Retain As Published keeps the
 * RETAIN flag, the identifier comes with each delivery, and Retain Handling 1
 * sends nothing on a re-SUBSCRIBE of the existing subscription. A message
 * queued before the kill keeps, in its msg record, the RETAIN flag it was
 * published with.
 */
import type { IClientOptions, MqttClient } from 'mqtt';
import type { IPublishPacket } from 'mqtt-packet';
import { afterEach, expect, it } from 'vitest';
import { runCairnCommand, startMqttBroker, tempDataDir } from '../support/broker-process.js';
import { connectMqtt5 } from '../support/mqtt5-client.js';
import { until } from '../support/kit.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function open(port: number, clientId: string, options: IClientOptions, received?: IPublishPacket[]): Promise<MqttClient> {
  const { client } = await connectMqtt5(port, clientId, options, received);
  cleanups.push(() => new Promise<void>((done) => client.end(true, {}, () => done())));
  return client;
}

const persistent: IClientOptions = { clean: false, properties: { sessionExpiryInterval: 3600 } };
const options = { qos: 1 as const, nl: true, rap: true, rh: 1, properties: { subscriptionIdentifier: 11 } };

it('subscription options survive kill -9, show in inspect, and act after the restart', async () => {
  const data = tempDataDir();
  cleanups.push(() => data.remove());
  let running = await startMqttBroker(data.dir, cleanups);
  const first = await open(running.mqttPort, 'opts', persistent);
  await first.subscribeAsync('opts/#', options);
  // More subscriptions than the snapshot interval, so a snapshot holds the options too.
  for (let i = 0; i < 6; i++) await first.subscribeAsync(`other/${i}`, { qos: 0, properties: { subscriptionIdentifier: 100 + i } });
  first.end(true);
  // Queued for the session before the kill: its msg record must keep the RETAIN flag it was published with.
  const before = await open(running.mqttPort, 'publisher', {});
  await before.publishAsync('opts/r', 'retained', { qos: 1, retain: true });
  await running.kill();

  const records = await runCairnCommand(['inspect', 'records', '--data', data.dir, '--kind', 'sub', '--client', 'opts']);
  expect(records.code).toBe(0);
  expect(records.stdout).toContain('filter=opts/# qos=1 no-local retain-as-published retain-handling=1 id=11');
  const state = await runCairnCommand(['inspect', 'state', '--data', data.dir]);
  expect(state.code).toBe(0);
  expect(state.stdout).toContain('opts/# (qos 1 no-local retain-as-published retain-handling=1 id=11)');

  running = await startMqttBroker(data.dir, cleanups);
  const publisher = await open(running.mqttPort, 'publisher', {});
  const received: IPublishPacket[] = [];
  const again = await open(running.mqttPort, 'opts', persistent, received);
  await until(() => received.length === 1, 'the message queued while away');
  expect(received[0]).toMatchObject({ retain: true, payload: Buffer.from('retained'), properties: { subscriptionIdentifier: 11 } });
  await again.publishAsync('opts/own', 'own', { qos: 1 });
  await again.subscribeAsync('opts/#', options);
  await publisher.publishAsync('opts/marker', 'marker', { qos: 1 });
  await until(() => received.length === 2, 'the marker');
  expect(received.map((packet) => packet.payload.toString())).toEqual(['retained', 'marker']);
});
