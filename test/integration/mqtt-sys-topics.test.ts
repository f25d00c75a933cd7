/**
 * $SYS topics with MQTT.js against an in-process Cairn: Mosquitto's names,
 * retained for new subscribers, refreshed every --sys-interval seconds,
 * never records in the log, never matched by a filter that starts with a
 * wildcard [MQTT-4.7.2-1], and absent with --sys-interval 0.
 */
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { startCairn, type RunningCairn } from '../../src/server.js';
import { version } from '../../src/version.js';
import { tempDirectory, until } from '../support/kit.js';

interface Received {
  readonly topic: string;
  readonly value: string;
  readonly retain: boolean;
}

async function client(cairn: RunningCairn, clientId: string, filters: string[]): Promise<{ client: mqtt.MqttClient; received: Received[] }> {
  const connected = await mqtt.connectAsync(`mqtt://127.0.0.1:${cairn.mqttPort!}`, { clientId, reconnectPeriod: 0 });
  const received: Received[] = [];
  connected.on('message', (topic, payload, packet) => received.push({ topic, value: payload.toString(), retain: packet.retain }));
  await connected.subscribeAsync(filters, { qos: 0 });
  return { client: connected, received };
}

/** An in-process Cairn (MQTT only) for the enclosing describe, with these $SYS flags. */
function cairnWith(sysInterval: string): () => RunningCairn {
  const data = tempDirectory('cairn-sys-');
  let cairn: RunningCairn | undefined;
  beforeAll(async () => {
    cairn = await startCairn(parseServeArgs(['--data', data.path, '--mqtt-port', '0', '--amqp-port', 'off', '--http-port', 'off', '--sys-interval', sysInterval], {}), silentLogger());
  });
  afterAll(async () => {
    await cairn?.close();
    data.remove();
  });
  return () => cairn!;
}

const mosquittoTopics = [
  'version', 'uptime', 'clients/connected', 'clients/disconnected', 'clients/total', 'clients/maximum',
  'messages/received', 'messages/sent', 'messages/stored', 'publish/messages/received', 'publish/messages/sent',
  'bytes/received', 'bytes/sent', 'store/messages/count', 'subscriptions/count', 'retained messages/count',
].map((name) => `$SYS/broker/${name}`);

describe('$SYS topics every --sys-interval 1', () => {
  const started = cairnWith('1');

  it('retained for a new $SYS/# subscriber, refreshed live, not logged, and never matched by # or +/...', async () => {
    const cairn = started();
    const watcher = await client(cairn, 'sys-watcher', ['$SYS/#']);
    await until(() => mosquittoTopics.every((topic) => watcher.received.some((m) => m.topic === topic && m.retain)), 'the retained $SYS values');
    const latest = (topic: string): string | undefined => watcher.received.filter((m) => m.topic === topic).at(-1)?.value;
    expect(latest('$SYS/broker/version')).toBe(`cairn version ${version}`);
    expect(latest('$SYS/broker/uptime')).toMatch(/^\d+ seconds$/);

    const wildcard = await client(cairn, 'wildcard', ['#', '+/broker/uptime', '+/#']);
    const publisher = await mqtt.connectAsync(`mqtt://127.0.0.1:${cairn.mqttPort!}`, { clientId: 'sys-publisher', reconnectPeriod: 0 });
    await publisher.publishAsync('plain/topic', 'hello', { qos: 0 });
    await until(() => wildcard.received.some((m) => m.topic === 'plain/topic'), 'the plain publish at the # subscriber');
    const lsnBefore = cairn.broker.log.nextLsn;
    const liveFrom = watcher.received.length;
    // Two refreshes after the wildcard subscriber and the publisher arrived.
    await until(() => watcher.received.slice(liveFrom).filter((m) => m.topic === '$SYS/broker/uptime' && !m.retain).length >= 2, 'two live uptime refreshes');
    await until(() => latest('$SYS/broker/clients/connected') === '3', 'clients/connected to count the three clients');
    expect(Number(latest('$SYS/broker/publish/messages/received'))).toBeGreaterThanOrEqual(1);
    expect(Number(latest('$SYS/broker/bytes/received'))).toBeGreaterThan(0);
    expect(latest('$SYS/broker/load/publish/received/1min')).toMatch(/^\d+\.\d\d$/);

    expect(wildcard.received.filter((m) => m.topic.startsWith('$'))).toEqual([]);
    expect(cairn.broker.log.nextLsn).toBe(lsnBefore);
    expect([...cairn.broker.state.retained.keys()].filter((topic) => topic.startsWith('$'))).toEqual([]);
    await Promise.all([watcher.client.endAsync(), wildcard.client.endAsync(), publisher.endAsync()]);
  });
});

describe('$SYS topics with --sys-interval 0', () => {
  const started = cairnWith('0');

  it('publishes nothing under $SYS', async () => {
    const cairn = started();
    const watcher = await client(cairn, 'sys-watcher', ['$SYS/#', 'probe']);
    await watcher.client.publishAsync('probe', 'x', { qos: 1 });
    // Retained values would have come right after SUBACK, before the probe's round trip.
    await until(() => watcher.received.some((m) => m.topic === 'probe'), 'the probe message');
    expect(watcher.received.map((m) => m.topic)).toEqual(['probe']);
    expect(cairn.broker.systemRetained.size).toBe(0);
    await watcher.client.endAsync();
  });
});
