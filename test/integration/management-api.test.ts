/**
 * The RabbitMQ-compatible management API over real HTTP against an
 * in-process Cairn with real clients (amqplib, MQTT.js): the status codes and
 * shapes RabbitMQ answers with (captured from RabbitMQ 3.10.8's management
 * plugin), every get ackmode, payload encodings and properties, listing
 * parameters, 400s with one-line reasons, a force-closed MQTT connection
 * publishing its will, and changes that are records in the log (they survive
 * a restart, as a client's would).
 */
import amqp from 'amqplib';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { startCairn, type RunningCairn } from '../../src/server.js';
import { tempDirectory, until } from '../support/kit.js';

type Json = Record<string, unknown>;

describe('management API (RabbitMQ shapes) with real clients', () => {
  const data = tempDirectory('cairn-management-');
  let cairn: RunningCairn;
  let base: string;

  const start = async (): Promise<void> => {
    cairn = await startCairn(parseServeArgs(['--data', data.path, '--mqtt-port', '0', '--amqp-port', '0', '--http-port', '0'], {}), silentLogger());
    base = `http://127.0.0.1:${cairn.httpPort!}/api`;
  };
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown; headers: Headers }> => {
    const response = await fetch(`${base}${path}`, { method, ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json' } }) });
    const text = await response.text();
    return { status: response.status, json: text === '' ? undefined : JSON.parse(text), headers: response.headers };
  };

  beforeAll(start);
  afterAll(async () => {
    await cairn?.close();
    data.remove();
  });

  it('PUT answers 201 for a new queue and 204 for an equal one, 400 with the reason for a different one', async () => {
    expect((await call('PUT', '/queues/%2F/jobs', { durable: true })).status).toBe(201);
    expect((await call('PUT', '/queues/%2F/jobs', { durable: 'true' })).status).toBe(204);
    const conflict = await call('PUT', '/queues/%2F/jobs', { durable: false });
    expect(conflict).toMatchObject({ status: 400, json: { error: 'bad_request', reason: "inequivalent arg 'durable' for queue 'jobs' in vhost '/': received 'false' but current is 'true'" } });
    const queue = (await call('GET', '/queues/%2F/jobs')).json;
    expect(queue).toMatchObject({ name: 'jobs', vhost: '/', durable: true, auto_delete: false, exclusive: false, arguments: {}, state: 'running', messages: 0, messages_ready: 0, messages_unacknowledged: 0, consumers: 0 });
    expect((await call('PUT', '/exchanges/%2F/events', { type: 'fanout', durable: true })).status).toBe(201);
    expect((await call('POST', '/bindings/%2F/e/events/q/jobs', { routing_key: '' })).headers.get('location')).toBe('/api/bindings/%2F/e/events/q/jobs/~');
    expect((await call('GET', '/bindings/%2F/e/events/q/jobs/~')).json).toEqual({ source: 'events', vhost: '/', destination: 'jobs', destination_type: 'queue', routing_key: '', arguments: {}, properties_key: '~' });
  });

  it('publish answers {routed}, get browses and settles by ackmode, properties and encodings round-trip', async () => {
    const properties = { delivery_mode: 2, content_type: 'application/octet-stream', headers: { attempt: 3, origin: 'api' }, message_id: 'm-1', timestamp: 1700000000 };
    expect((await call('POST', '/exchanges/%2F/events/publish', { routing_key: '', payload: '/wA=', payload_encoding: 'base64', properties })).json).toEqual({ routed: true });
    expect((await call('POST', '/exchanges/%2F/amq.default/publish', { routing_key: 'jobs', payload: 'héllo wörld', payload_encoding: 'string', properties: {} })).json).toEqual({ routed: true });
    expect((await call('POST', '/exchanges/%2F/amq.default/publish', { routing_key: 'nobody', payload: 'x', payload_encoding: 'string', properties: {} })).json).toEqual({ routed: false });

    const browse = { count: 10, ackmode: 'ack_requeue_true', encoding: 'auto', truncate: 6 };
    const first = (await call('POST', '/queues/%2F/jobs/get', browse)).json as Json[];
    expect(first).toEqual([
      { payload_bytes: 2, redelivered: false, exchange: 'events', routing_key: '', message_count: 1, properties, payload: '/wA=', payload_encoding: 'base64' },
      { payload_bytes: 13, redelivered: false, exchange: '', routing_key: 'jobs', message_count: 0, properties: {}, payload: 'héllo', payload_encoding: 'string' },
    ]);
    const again = (await call('POST', '/queues/%2F/jobs/get', { ...browse, encoding: 'base64', truncate: undefined })).json as Json[];
    expect(again.map((m) => [m['redelivered'], m['payload'], m['payload_encoding']])).toEqual([[true, '/wA=', 'base64'], [true, Buffer.from('héllo wörld').toString('base64'), 'base64']]);

    const rejected = (await call('POST', '/queues/%2F/jobs/get', { count: 1, ackmode: 'reject_requeue_true', encoding: 'auto' })).json as Json[];
    expect(rejected).toHaveLength(1);
    expect((await call('GET', '/queues/%2F/jobs')).json).toMatchObject({ messages: 2, messages_ready: 2 });
    expect(((await call('POST', '/queues/%2F/jobs/get', { count: 1, ackmode: 'reject_requeue_false', encoding: 'auto' })).json as Json[])[0]).toMatchObject({ exchange: 'events' });
    expect(((await call('POST', '/queues/%2F/jobs/get', { count: 1, ackmode: 'ack_requeue_false', encoding: 'auto' })).json as Json[])[0]).toMatchObject({ routing_key: 'jobs' });
    expect((await call('POST', '/queues/%2F/jobs/get', { count: 1, ackmode: 'ack_requeue_false', encoding: 'auto' })).json).toEqual([]);
    // The persistent message's removal is an ack record: the durable queue's state holds nothing.
    expect(cairn.broker.state.queues.get('jobs')?.pending.size).toBe(0);
  });

  it('400 with a one-line reason for malformed bodies, unknown fields and unknown query parameters; 404 for another vhost', async () => {
    const cases: Array<[string, string, unknown, RegExp]> = [
      ['PUT', '/queues/%2F/bad', '{durable', /^body is not valid JSON: /],
      ['PUT', '/queues/%2F/bad', '[1]', /^body must be a JSON object$/],
      ['PUT', '/queues/%2F/bad', { durabel: true }, /^unknown field\(s\) 'durabel' in a queue declaration; accepted: /],
      ['PUT', '/queues/%2F/bad', { durable: 'yes' }, /^field 'durable' must be true or false, got "yes"$/],
      ['POST', '/queues/%2F/jobs/get', { count: 1, ackmode: 'peek' }, /^ackmode must be one of ack_requeue_true, /],
      ['POST', '/queues/%2F/jobs/get', { count: 0, ackmode: 'ack_requeue_true' }, /^field 'count' must be an integer from 1 to /],
      ['POST', '/exchanges/%2F/amq.default/publish', { routing_key: 'jobs', payload: '%%%', payload_encoding: 'base64' }, /^payload is not valid base64$/],
      ['POST', '/exchanges/%2F/amq.default/publish', { routing_key: 'jobs', payload: 'x', properties: { colour: 'red' } }, /^unknown field\(s\) 'colour' in properties/],
      ['GET', '/queues?sort=name&colums=name', undefined, /^unknown query parameter 'colums' for \/api\/queues; accepted: /],
      ['GET', '/queues?page=0', undefined, /^query parameter 'page' must be an integer from 1 to /],
      ['GET', '/overview?sort=name', undefined, /^unknown query parameter 'sort' for \/api\/overview/],
    ];
    for (const [method, path, body, reason] of cases) {
      const { status, json } = await call(method, path, body);
      expect({ path, status }).toEqual({ path, status: 400 });
      expect((json as Json)['reason']).toMatch(reason);
      expect(String((json as Json)['reason'])).not.toContain('\n');
    }
    expect((await call('GET', '/queues/other/jobs')).status).toBe(404);
    expect((await call('GET', '/queues/%2F/missing')).json).toEqual({ error: 'not_found', reason: "no queue 'missing' in vhost '/'" });
  });

  it('lists with columns, sort, sort_reverse and pagination as RabbitMQ does', async () => {
    for (const name of ['b-queue', 'a-queue', 'c-queue']) await call('PUT', `/queues/%2F/${name}`, {});
    const sorted = (await call('GET', '/queues?columns=name,messages&sort=name&sort_reverse=true')).json as Json[];
    expect(sorted.map((q) => q['name'])).toEqual(['jobs', 'c-queue', 'b-queue', 'a-queue']);
    expect(sorted[0]).toEqual({ name: 'jobs', messages: 0 });
    const page = (await call('GET', '/queues?page=2&page_size=2&name=queue&columns=name')).json;
    expect(page).toEqual({ filtered_count: 3, item_count: 1, items: [{ name: 'c-queue' }], page: 2, page_count: 2, page_size: 2, total_count: 4 });
    expect((await call('GET', '/overview?columns=object_totals.queues,queue_totals.messages')).json).toEqual({ object_totals: { queues: 4 }, queue_totals: { messages: 0 } });
  });

  it('DELETE /api/connections/{name} closes an MQTT connection as an abnormal close: its will is published', async () => {
    const watcher = await mqtt.connectAsync(`mqtt://127.0.0.1:${cairn.mqttPort!}`, { clientId: 'watcher' });
    await watcher.subscribeAsync('wills/#', { qos: 1 });
    const wills: string[] = [];
    watcher.on('message', (topic, payload) => wills.push(`${topic}=${payload.toString()}`));
    const doomed = await mqtt.connectAsync(`mqtt://127.0.0.1:${cairn.mqttPort!}`, { clientId: 'doomed', reconnectPeriod: 0, will: { topic: 'wills/doomed', payload: Buffer.from('gone'), qos: 1, retain: false } });
    const connections = (await call('GET', '/connections')).json as Json[];
    const doomedConnection = connections.find((c) => (c['client_properties'] as Json)['client_id'] === 'doomed');
    expect(doomedConnection).toMatchObject({ protocol: 'MQTT 3.1.1', vhost: '/', state: 'running', channels: 0 });
    expect((await call('DELETE', `/connections/${encodeURIComponent(String(doomedConnection!['name']))}`)).status).toBe(204);
    await until(() => wills.includes('wills/doomed=gone'), 'the will of the closed connection');
    expect(((await call('GET', '/connections')).json as Json[]).map((c) => (c['client_properties'] as Json)['client_id'])).toEqual(['watcher']);
    doomed.end(true);
    await watcher.endAsync();
  });

  it('an AMQP client\'s channel shows its prefetch, unacked deliveries and consumer', async () => {
    const connection = await amqp.connect(`amqp://127.0.0.1:${cairn.amqpPort!}`);
    const channel = await connection.createChannel();
    await channel.prefetch(2);
    const delivered: amqp.ConsumeMessage[] = [];
    await channel.consume('a-queue', (message) => { if (message) delivered.push(message); }, { consumerTag: 'c1' });
    for (let i = 0; i < 3; i++) await call('POST', '/exchanges/%2F/amq.default/publish', { routing_key: 'a-queue', payload: `m${i}`, payload_encoding: 'string', properties: {} });
    await until(() => delivered.length === 2, 'two deliveries (prefetch 2)');
    const channels = (await call('GET', '/channels')).json as Json[];
    expect(channels).toEqual([expect.objectContaining({ number: 1, consumer_count: 1, messages_unacknowledged: 2, prefetch_count: 2, global_prefetch_count: 0, confirm: false, state: 'running' })]);
    expect((await call('GET', '/queues/%2F/a-queue')).json).toMatchObject({ messages: 3, messages_ready: 1, messages_unacknowledged: 2, consumers: 1 });
    const consumers = (await call('GET', '/consumers/%2F')).json as Json[];
    expect(consumers).toEqual([expect.objectContaining({ consumer_tag: 'c1', queue: { name: 'a-queue', vhost: '/' }, ack_required: true, prefetch_count: 2, exclusive: false })]);
    await connection.close();
  });

  it('what the API declared is in the log: it is there after a restart', async () => {
    await cairn.close();
    await start();
    expect(((await call('GET', '/queues?columns=name,durable')).json as Json[])).toEqual([{ name: 'jobs', durable: true }]);
    expect((await call('GET', '/exchanges/%2F/events')).json).toMatchObject({ name: 'events', type: 'fanout', durable: true });
    expect((await call('GET', '/bindings/%2F/e/events/q/jobs')).json).toEqual([expect.objectContaining({ source: 'events', destination: 'jobs', properties_key: '~' })]);
    expect((await call('DELETE', '/bindings/%2F/e/events/q/jobs/~')).status).toBe(204);
    expect((await call('DELETE', '/bindings/%2F/e/events/q/jobs/~')).status).toBe(404);
    expect((await call('DELETE', '/exchanges/%2F/events')).status).toBe(204);
    expect((await call('DELETE', '/queues/%2F/jobs')).status).toBe(204);
    expect((await call('DELETE', '/queues/%2F/jobs')).status).toBe(404);
  });
});
