/**
 * MQTT 5 with a second real client library: paho-mqtt (Python, Debian
 * python3-paho-mqtt, installed by tools/install-test-packages.sh) runs
 * test/integration/fixtures/paho-mqtt5-check.py against the broker and prints
 * what it saw: CONNACK's properties, SUBACK's reason codes, and its own two
 * messages (QoS 1 with PUBLISH properties, QoS 2) delivered back to it, the
 * properties intact; and a second script's subscription options (No Local,
 * Retain As Published, Retain Handling, a Subscription Identifier) act.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { SegmentedLog } from '../../src/log/index.js';
import { silentLogger } from '../../src/logger.js';
import { startMqttServer, type MqttServer } from '../../src/protocols/mqtt/server.js';

const run = promisify(execFile);
const script = join(import.meta.dirname, 'fixtures', 'paho-mqtt5-check.py');
const optionsScript = join(import.meta.dirname, 'fixtures', 'paho-mqtt5-subscription-options.py');

let dataDir: string;
let log: SegmentedLog;
let broker: Broker;
let server: MqttServer;

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'cairn-paho5-'));
  log = await SegmentedLog.open({ dir: dataDir, logger: silentLogger() });
  broker = Broker.open({ log, logger: silentLogger() });
  server = await startMqttServer({ core: broker.mqtt, host: '127.0.0.1', port: 0, logger: silentLogger() });
});

afterEach(async () => {
  await server.close();
  await broker.flush();
  await log.close();
  await rm(dataDir, { recursive: true, force: true });
});

interface PahoReport {
  connack: { reasonCode: number; properties: Record<string, unknown> };
  suback: number[];
  messages: Array<{ topic: string; payload: string; qos: number; properties: Record<string, unknown> }>;
}

it('paho-mqtt MQTTv5 connects, subscribes and gets its QoS 1 and QoS 2 messages back', async () => {
  const { stdout } = await run('/usr/bin/python3', [script, String(server.port)], { timeout: 20_000 });
  const report = JSON.parse(stdout) as PahoReport;
  expect(report.connack.reasonCode).toBe(0);
  expect(report.connack.properties).toMatchObject({ ReceiveMaximum: 1024, TopicAliasMaximum: 64, MaximumPacketSize: 1024 * 1024 });
  expect(report.suback).toEqual([1]);
  const byTopic = new Map(report.messages.map((message) => [message.topic, message]));
  // The PUBLISH properties paho set travel with the message (CorrelationData is printed as hex).
  expect(byTopic.get('paho/v5/one')).toMatchObject({
    payload: 'qos one', qos: 1,
    properties: {
      PayloadFormatIndicator: 1, MessageExpiryInterval: 3600, ContentType: 'text/plain', ResponseTopic: 'paho/replies',
      CorrelationData: Buffer.from('corr-1').toString('hex'), UserProperty: [['origin', 'paho'], ['n', '1']],
    },
  });
  expect(byTopic.get('paho/v5/two')).toMatchObject({ payload: 'qos two', qos: 1 });
});

it('paho-mqtt MQTTv5 subscription options: No Local, Retain As Published and a Subscription Identifier act', async () => {
  const { stdout } = await run('/usr/bin/python3', [optionsScript, String(server.port)], { timeout: 20_000 });
  const { messages } = JSON.parse(stdout) as { messages: Array<{ topic: string; payload: string; retain: number | boolean; properties: Record<string, unknown> }> };
  // Its own paho/nl/ message does not come back [MQTT-3.8.3-3]; the RETAIN flag does [MQTT-3.3.1-13], with identifier 7.
  expect(messages.map((message) => [message.topic, message.payload, Boolean(message.retain)])).toEqual([
    ['paho/rap/kept', 'retained', true],
    ['paho/rap/marker', 'marker', false],
  ]);
  expect(messages[0]?.properties).toMatchObject({ SubscriptionIdentifier: [7] });
});
