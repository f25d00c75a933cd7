/**
 * Topic ACLs (--acl, Mosquitto's acl_file) with MQTT.js, and AMQP
 * permissions (RabbitMQ's configure/write/read expressions in the users file)
 * with amqplib, on a whole broker:
 * - a refused SUBSCRIBE filter gets 0x80 in its SUBACK slot [MQTT-3.9.3-1];
 * - a refused PUBLISH is acknowledged (PUBACK, or PUBREC…PUBCOMP) and dropped,
 *   and counted in cairn_access_denied_total;
 * - reads are checked at delivery: a subscription to '#' does not receive a
 *   refused topic, neither live, nor retained, nor queued for an offline
 *   persistent session before the rules changed;
 * - %c / %u patterns, the anonymous section, the will topic;
 * - reload: new rules apply to connected clients, a bad file keeps the old
 *   rules, a bad file at start-up stops it naming the line; SIGHUP on the CLI;
 * - AMQP: 403 ACCESS_REFUSED closes the channel for declare, publish, bind
 *   and consume outside the user's expressions.
 */
import { writeFileSync } from 'node:fs';
import amqp from 'amqplib';
import type { MqttClient } from 'mqtt';
import { afterEach, describe, expect, it } from 'vitest';
import { metricNames } from '../../src/metrics.js';
import { startBroker, type BrokerProcess } from '../support/broker-process.js';
import { startEdgeBroker, writeTestFile, writeUsersFile, type EdgeBroker } from '../support/edge-broker.js';
import { tempDirectory, until } from '../support/kit.js';

const password = 'pw';
const aclText = [
  '# devices write under their own client id; users read their inbox',
  'pattern readwrite devices/%c/#',
  'pattern read users/%u/inbox',
  'user alice',
  'topic readwrite #',
  'topic deny secret/#',
  'topic deny devices/d2/#',
  'user bob',
  'topic read sensors/+/temp',
  'topic write sensors/bob/temp',
  'topic write users/+/inbox',
].join('\n');

let broker: EdgeBroker | undefined;
let aclPath: string;
afterEach(async () => {
  await broker?.close();
  broker = undefined;
});

async function start(text = aclText, users = true): Promise<EdgeBroker> {
  broker = await startEdgeBroker(async (dir) => {
    aclPath = writeTestFile(dir, 'cairn.acl', text);
    const usersFile = await writeUsersFile(dir, ['alice', 'bob', 'd1', 'd2', { username: 'rabbit', amqp: { configure: '^lim-', write: '^lim-|^amq\\.topic$', read: '^lim-' } }, 'admin'], password);
    return ['--acl', aclPath, ...(users ? ['--users', usersFile] : [])];
  });
  return broker;
}

/** The SUBACK return codes (MQTT.js rejects a SUBACK holding 0x80, with the packet). */
async function subackCodes(client: MqttClient, filters: string | string[] | Record<string, { qos: 0 | 1 | 2 }>, qos: 0 | 1 | 2 = 0): Promise<number[]> {
  try {
    const granted = typeof filters === 'object' && !Array.isArray(filters) ? await client.subscribeAsync(filters) : await client.subscribeAsync(filters, { qos });
    return granted.map((grant) => grant.qos);
  } catch (error: unknown) {
    const packet = (error as { packet?: { granted?: number[] } }).packet;
    if (packet?.granted === undefined) throw error;
    return packet.granted;
  }
}

const mqttUrl = (): string => `mqtt://127.0.0.1:${broker!.running.mqttPort!}`;
const as = (username: string, clientId = username): { username: string; password: string; clientId: string } => ({ username, password, clientId });

async function deniedCount(action: string): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${broker!.running.httpPort!}/metrics`, { headers: { authorization: `Basic ${Buffer.from(`admin:${password}`).toString('base64')}` } });
  const text = await response.text();
  const match = new RegExp(`^${metricNames.accessDenied}\\{action="${action}"\\} (\\d+)$`, 'm').exec(text);
  return Number(match?.[1] ?? NaN);
}

describe('MQTT topic ACL', () => {
  it('SUBACK carries 0x80 for each refused filter, the granted QoS for the others [MQTT-3.9.3-1]', async () => {
    await start();
    const { client } = await broker!.connect(mqttUrl(), as('bob'));
    expect(await subackCodes(client, { 'sensors/+/temp': { qos: 1 }, 'sensors/#': { qos: 1 }, 'secret/x': { qos: 0 } })).toEqual([1, 0x80, 0x80]);
    expect(await deniedCount('subscribe')).toBe(2);
  });

  it('a refused PUBLISH is acknowledged and dropped (QoS 1 and 2), and counted; an allowed one goes through', async () => {
    await start();
    const { client: alice, lines } = await broker!.connect(mqttUrl(), as('alice'));
    await alice.subscribeAsync('sensors/#', { qos: 1 });
    const { client: bob } = await broker!.connect(mqttUrl(), as('bob'));
    await bob.publishAsync('sensors/alice/temp', 'forged', { qos: 1 }); // resolves on PUBACK
    await bob.publishAsync('sensors/alice/temp', 'forged again', { qos: 2 }); // resolves on PUBCOMP
    await bob.publishAsync('sensors/bob/temp', '21.5', { qos: 1 });
    await until(() => lines.length === 1, 'the allowed publish reached alice');
    expect(lines).toEqual(['sensors/bob/temp 21.5']);
    expect(await deniedCount('publish')).toBe(2);
  });

  it('reads are checked at delivery: a subscription to # gets neither a refused topic live nor retained', async () => {
    await start();
    const { client: d1 } = await broker!.connect(mqttUrl(), as('d1'));
    const { client: d2 } = await broker!.connect(mqttUrl(), as('d2'));
    await d1.publishAsync('devices/d1/state', 'on', { qos: 1, retain: true });
    await d2.publishAsync('devices/d2/state', 'off', { qos: 1, retain: true });
    const { client: alice, lines } = await broker!.connect(mqttUrl(), as('alice'));
    expect(await subackCodes(alice, '#', 1)).toEqual([1]);
    await until(() => lines.length === 1, 'the readable retained message');
    await d2.publishAsync('devices/d2/state', 'live', { qos: 1 });
    await d1.publishAsync('devices/d1/state', 'live', { qos: 1 });
    await until(() => lines.length === 2, 'the readable live message');
    expect(lines).toEqual(['devices/d1/state on', 'devices/d1/state live']);
    expect(await deniedCount('read')).toBeGreaterThanOrEqual(2);
  });

  it('an AMQP publish into amq.topic is held to the MQTT subscriber\'s read rules too', async () => {
    await start();
    const { client: alice, lines } = await broker!.connect(mqttUrl(), as('alice'));
    await alice.subscribeAsync('#', { qos: 1 });
    const connection = await amqp.connect(`amqp://admin:${password}@127.0.0.1:${broker!.running.amqpPort!}`);
    try {
      const channel = await connection.createConfirmChannel();
      channel.publish('amq.topic', 'secret.plans', Buffer.from('hidden'), { deliveryMode: 2 });
      channel.publish('amq.topic', 'open.news', Buffer.from('visible'), { deliveryMode: 2 });
      await channel.waitForConfirms();
    } finally {
      await connection.close();
    }
    await until(() => lines.length === 1, 'the readable bridged message');
    expect(lines).toEqual(['open/news visible']);
  });

  it('patterns substitute %c and %u; the will topic must be publishable (else CONNACK 5)', async () => {
    await start();
    const { client: device } = await broker!.connect(mqttUrl(), as('bob', 'dev9'));
    const { client: watcher, lines } = await broker!.connect(mqttUrl(), as('alice'));
    await watcher.subscribeAsync('devices/#', { qos: 1 });
    await device.publishAsync('devices/dev8/x', 'not mine', { qos: 1 });
    await device.publishAsync('devices/dev9/x', 'mine', { qos: 1 });
    await until(() => lines.length === 1, 'the device publish under its own client id');
    expect(lines).toEqual(['devices/dev9/x mine']);
    const { client: inbox } = await broker!.connect(mqttUrl(), as('bob', 'bob-reader'));
    expect(await subackCodes(inbox, ['users/bob/inbox', 'users/alice/inbox'])).toEqual([0, 0x80]);
    await expect(broker!.connect(mqttUrl(), { ...as('bob', 'bad-will'), will: { topic: 'secret/will', payload: Buffer.from('x'), qos: 0, retain: false } }))
      .rejects.toMatchObject({ code: 5 });
  });

  it('without a users file, the anonymous section applies to clients that send no user name', async () => {
    await start('topic read public/#\nuser alice\ntopic readwrite #', false);
    const { client } = await broker!.connect(mqttUrl(), { clientId: 'anon' });
    expect(await subackCodes(client, ['public/#', 'private/#'])).toEqual([0, 0x80]);
  });
});

describe('ACL reload', () => {
  it('new rules apply to connected and offline clients at once; queued messages they may no longer read are dropped', async () => {
    await start();
    const first = await broker!.connect(mqttUrl(), { ...as('alice'), clean: false });
    await first.client.subscribeAsync('news/#', { qos: 1 });
    await first.client.endAsync();
    const { client: publisher } = await broker!.connect(mqttUrl(), as('alice', 'alice-pub'));
    await publisher.publishAsync('news/old', 'queued before the change', { qos: 1 });

    writeFileSync(aclPath, aclText.replace('topic deny secret/#', 'topic deny secret/#\ntopic deny news/old'));
    expect(await broker!.running.reload()).toEqual({ failures: [] });
    await publisher.publishAsync('news/new', 'after the change', { qos: 1 });
    const second = await broker!.connect(mqttUrl(), { ...as('alice'), clean: false });
    expect(second.connack.sessionPresent).toBe(true);
    await until(() => second.lines.length === 1, 'the readable queued message');
    expect(second.lines).toEqual(['news/new after the change']);
    // The unreadable one left the session's queue (a drop record), it is not waiting there.
    await until(() => broker!.running.broker.sessions.get('alice')!.state.pending.size === 0, 'the session queue emptied');
  });

  it('a bad file on reload keeps the rules in force and names the line; at start-up it stops the broker', async () => {
    await start();
    writeFileSync(aclPath, 'user bob\ntopic read sensors/#\ntopic sometimes x\n');
    const { failures } = await broker!.running.reload();
    expect(failures).toEqual([expect.stringMatching(/cairn\.acl line 3: 'sometimes x': a topic containing a space needs an access word/)]);
    const { client } = await broker!.connect(mqttUrl(), as('bob'));
    expect(await subackCodes(client, 'sensors/#')).toEqual([0x80]); // the old rules
    await broker!.close();
    broker = undefined;
    await expect(start('user bob\n\ntopic read a/#/b\n')).rejects.toThrow(/line 3: 'a\/#\/b' is not a valid topic filter/);
  });

  it('SIGHUP makes `cairn serve` re-read the ACL file', async () => {
    const dir = tempDirectory('cairn-acl-sighup-');
    let child: BrokerProcess | undefined;
    try {
      const acl = writeTestFile(dir.path, 'cairn.acl', 'topic read a/#\n');
      child = await startBroker(`${dir.path}/data`, ['--acl', acl]);
      const { default: mqtt } = await import('mqtt');
      const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${child.mqttPort}`, { clientId: 'hup', reconnectPeriod: 0 });
      try {
        expect(await subackCodes(client, 'b/#')).toEqual([0x80]);
        writeFileSync(acl, 'topic read a/#\ntopic read b/#\n');
        child.child.kill('SIGHUP');
        // The log after start-up is not kept: the new rule granting b/# is the fact to wait for.
        await until(async () => (await subackCodes(client, 'b/#'))[0] === 0, 'SUBSCRIBE b/# granted after SIGHUP');
      } finally {
        await client.endAsync();
      }
    } finally {
      await child?.stop();
      dir.remove();
    }
  });
});

describe('AMQP permissions (RabbitMQ configure/write/read on vhost /)', () => {
  const url = (): string => `amqp://rabbit:${password}@127.0.0.1:${broker!.running.amqpPort!}`;

  it('allows what the expressions match', async () => {
    await start();
    const connection = await amqp.connect(url());
    try {
      const channel = await connection.createConfirmChannel();
      await channel.assertExchange('lim-x', 'fanout', { durable: false });
      await channel.assertQueue('lim-q', { durable: false });
      await channel.bindQueue('lim-q', 'lim-x', '');
      channel.publish('lim-x', '', Buffer.from('allowed'));
      await channel.waitForConfirms();
      const message = await channel.get('lim-q', { noAck: true });
      expect(message && message.content.toString()).toBe('allowed');
    } finally {
      await connection.close();
    }
  });

  it.each([
    ['queue.declare outside configure', (channel: amqp.Channel) => channel.assertQueue('other-q'), /403 \(ACCESS-REFUSED\).*configure access to queue 'other-q' in vhost '\/' refused for user 'rabbit'/],
    ['exchange.declare outside configure', (channel: amqp.Channel) => channel.assertExchange('other-x', 'topic'), /configure access to exchange 'other-x'/],
    ['queue.bind to an exchange outside read', async (channel: amqp.Channel) => { await channel.assertQueue('lim-q2'); return channel.bindQueue('lim-q2', 'amq.fanout', ''); }, /read access to exchange 'amq.fanout'/],
    ['basic.consume outside read', (channel: amqp.Channel) => channel.consume('amq.gen-elsewhere', () => undefined), /read access to queue 'amq.gen-elsewhere'/],
  ])('%s: 403 ACCESS_REFUSED closes the channel', async (_name, operation, reason) => {
    await start();
    const connection = await amqp.connect(url());
    try {
      const channel = await connection.createChannel();
      channel.on('error', () => undefined);
      await expect(operation(channel)).rejects.toThrow(reason);
      expect(await deniedCount('amqp')).toBe(1);
    } finally {
      await connection.close();
    }
  });

  it('basic.publish to the default exchange needs write on amq.default', async () => {
    await start();
    const connection = await amqp.connect(url());
    try {
      const channel = await connection.createChannel();
      const closed = new Promise<Error>((resolve) => channel.once('error', resolve));
      channel.sendToQueue('lim-q', Buffer.from('x'));
      expect((await closed).message).toMatch(/403 \(ACCESS-REFUSED\).*write access to exchange 'amq.default'/);
    } finally {
      await connection.close();
    }
  });
});
