/**
 * The HTTP API over real HTTP (global fetch) against a real Broker on a
 * MemoryLog with the article's ingest routes: five MQTT publishes become three
 * sensor_readings documents and one pings document; the article's filter
 * {"value": {"$gte": 25}} returns the greenhouse temperature and humidity.
 * Also: errors as RabbitMQ's {error, reason}, /metrics as Prometheus text, Basic auth.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword, parseUsersFile } from '../../src/auth/users.js';
import type { MqttClientLink, MqttOutgoingPublish } from '../../src/core/api.js';
import { Broker } from '../../src/core/broker.js';
import { parseIngestRoutes } from '../../src/core/ingest.js';
import { MemoryLog } from '../../src/core/record-log.js';
import { startHttpServer, type HttpServerHandle } from '../../src/http/server.js';
import { silentLogger } from '../../src/logger.js';
import { Metrics, metricNames } from '../../src/metrics.js';

class FakeLink implements MqttClientLink {
  readonly received: MqttOutgoingPublish[] = [];
  sendPublish(publish: MqttOutgoingPublish): boolean { this.received.push(publish); return true; }
  sendPubrel(): void {}
  takenOver(): undefined { return undefined; }
  readFailed(error: Error): void { throw error; }
}

const articlePublishes: ReadonlyArray<readonly [string, string]> = [
  ['sensors/greenhouse/temp', '{"value": 27.3, "unit": "C"}'],
  ['sensors/greenhouse/humidity', '{"value": 71, "unit": "%"}'],
  ['sensors/garage/temp', '18.9'],
  ['fleet/u42/pos', '{"lat": 41.0151, "lon": 28.9795, "speed": 34}'],
  ['chat/general', '{"msg": "not mapped"}'],
];

async function articleBroker(publishes = articlePublishes, routes = 'sensors/#:sensor_readings,fleet/+/pos:pings'): Promise<Broker> {
  let now = 1791754335817;
  const broker = Broker.open({ log: new MemoryLog(), ingestRoutes: parseIngestRoutes(routes), clock: () => now++ });
  const { session, durable } = broker.mqtt.connect('probe', true, new FakeLink());
  await durable;
  session.start();
  let packetId = 1;
  for (const [topic, text] of publishes) {
    const result = session.publish({ topic, payload: new TextEncoder().encode(text), qos: 1, retain: false, packetId: packetId++ });
    await result.durable;
  }
  return broker;
}

async function getJson(base: string, path: string, init?: RequestInit): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const response = await fetch(`${base}${path}`, init);
  return { status: response.status, body: (await response.json()) as Record<string, unknown>, headers: response.headers };
}

describe('HTTP API over the article\'s ingest example', () => {
  let broker: Broker;
  let server: HttpServerHandle;
  let base: string;
  const metrics = new Metrics();
  let nextLsnAtStart = 0;

  beforeAll(async () => {
    broker = await articleBroker();
    metrics.messageIn('mqtt');
    metrics.fsync(0.002, 3);
    nextLsnAtStart = broker.log.nextLsn;
    server = await startHttpServer({ broker, host: '127.0.0.1', port: 0, logger: silentLogger(), metrics, version: '0.1.0-test' });
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server.close();
  });

  it('lists the two collections with their counts, and nothing for chat/general', async () => {
    const { status, body } = await getJson(base, '/api/collections');
    expect(status).toBe(200);
    expect(body['collections']).toEqual([{ name: 'pings', documents: 1 }, { name: 'sensor_readings', documents: 3 }]);
  });

  it('returns sensor_readings in the article\'s shapes, 18.9 wrapped as {"payload": 18.9}', async () => {
    const { body } = await getJson(base, '/api/collections/sensor_readings/documents');
    const documents = body['documents'] as Array<Record<string, unknown>>;
    expect(documents).toHaveLength(3);
    expect(documents.map(({ _received_at: receivedAt, ...rest }) => { expect(typeof receivedAt).toBe('number'); return rest; })).toEqual([
      { value: 27.3, unit: 'C', _topic: 'sensors/greenhouse/temp', _id: 1 },
      { value: 71, unit: '%', _topic: 'sensors/greenhouse/humidity', _id: 2 },
      { payload: 18.9, _topic: 'sensors/garage/temp', _id: 3 },
    ]);
    const pings = (await getJson(base, '/api/collections/pings/documents')).body['documents'] as Array<Record<string, unknown>>;
    expect(pings).toEqual([expect.objectContaining({ lat: 41.0151, lon: 28.9795, speed: 34, _topic: 'fleet/u42/pos', _id: 1 })]);
  });

  it('{"value": {"$gte": 25}} returns the greenhouse temperature and humidity', async () => {
    const filter = encodeURIComponent(JSON.stringify({ value: { $gte: 25 } }));
    const { status, body } = await getJson(base, `/api/collections/sensor_readings/documents?filter=${filter}`);
    expect(status).toBe(200);
    const documents = body['documents'] as Array<Record<string, unknown>>;
    expect(documents.map((d) => [d['_topic'], d['value'], d['unit']])).toEqual([
      ['sensors/greenhouse/temp', 27.3, 'C'],
      ['sensors/greenhouse/humidity', 71, '%'],
    ]);
  });

  it('sorts, skips and limits', async () => {
    const sort = encodeURIComponent(JSON.stringify({ _id: -1 }));
    const { body } = await getJson(base, `/api/collections/sensor_readings/documents?sort=${sort}&skip=1&limit=1`);
    expect((body['documents'] as Array<Record<string, unknown>>).map((d) => d['_id'])).toEqual([2]);
  });

  it('a bad filter is 400 with the reason', async () => {
    const bad = await getJson(base, `/api/collections/sensor_readings/documents?filter=${encodeURIComponent('{"value":{"$in":25}}')}`);
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'bad_request', reason: "$in on 'value' needs an array, got number 25" });
    const notJson = await getJson(base, `/api/collections/sensor_readings/documents?filter=${encodeURIComponent('{value')}`);
    expect(notJson.status).toBe(400);
    expect(String(notJson.body['reason'])).toMatch(/^filter is not valid JSON: /);
    const tooMany = await getJson(base, '/api/collections/sensor_readings/documents?limit=5000');
    expect(tooMany.body).toEqual({ error: 'bad_request', reason: 'limit must be at most 1000, got 5000' });
    const unknown = await getJson(base, '/api/collections/sensor_readings/documents?limt=5');
    expect(unknown).toMatchObject({ status: 400, body: { error: 'bad_request' } });
    expect(String(unknown.body['reason'])).toMatch(/^unknown query parameter 'limt' /);
  });

  it('404 for unknown routes and collections, 405 for other methods', async () => {
    expect((await getJson(base, '/api/nothing')).status).toBe(404);
    const missing = await getJson(base, '/api/collections/chat/documents');
    expect(missing).toMatchObject({ status: 404, body: { error: 'not_found', reason: "no collection named 'chat'" } });
    const post = await getJson(base, '/api/overview', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect((await getJson(base, '/api/queues/%2F/q', { method: 'PATCH' })).headers.get('allow')).toBe('GET, PUT, DELETE, HEAD');
  });

  it('overview, sessions, queues, exchanges, bindings and log', async () => {
    const overview = (await getJson(base, '/api/overview')).body;
    expect(overview).toMatchObject({ product_name: 'Cairn', product_version: '0.1.0-test', object_totals: { queues: 0, exchanges: 6 } });
    const cairn = overview['cairn'] as Record<string, unknown>;
    expect(cairn).toMatchObject({ version: '0.1.0-test', sessions: { total: 1, connected: 1, persistent: 0 }, collections: 2 });
    expect((cairn['log'] as Record<string, unknown>)['nextLsn']).toBe(broker.log.nextLsn);
    const sessions = (await getJson(base, '/api/sessions')).body;
    expect(sessions['sessions']).toEqual([{ clientId: 'probe', connected: true, persistent: false, subscriptions: [], pending: 0, inflight: 0, dropped: 0 }]);
    expect((await getJson(base, '/api/queues')).body).toEqual([]);
    const exchanges = (await getJson(base, '/api/exchanges')).body as unknown as Array<Record<string, unknown>>;
    expect(exchanges.map((e) => e['name'])).toEqual(['', 'amq.direct', 'amq.fanout', 'amq.headers', 'amq.match', 'amq.topic']);
    expect((await getJson(base, '/api/bindings')).body).toEqual([]);
    const log = (await getJson(base, '/api/log')).body;
    expect(log).toMatchObject({ nextLsn: broker.log.nextLsn, firstLsn: 1, durableLsn: broker.log.nextLsn - 1, lastSnapshot: null });
  });

  it('/metrics is Prometheus text with Cairn\'s metric names', async () => {
    await broker.mqtt.connect('late', false, new FakeLink()).durable; // a persistent session: records after the server started
    expect(broker.log.nextLsn).toBeGreaterThan(nextLsnAtStart);
    const response = await fetch(`${base}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    // prom-client writes NaN as 'Nan' (an event-loop delay read over no samples); Prometheus parses it, case aside.
    const sampleLine = /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? (-?[0-9.e+-]+|NaN|Nan|[+-]Inf)$/;
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
      expect(line).toMatch(sampleLine);
    }
    for (const name of Object.values(metricNames)) expect(text).toContain(`# TYPE ${name} `);
    expect(text).toContain('rabbitmq_global_messages_received_total{protocol="mqtt311"} 1');
    expect(text).toContain('cairn_log_batch_records_sum 3');
    // Counted from the log position when the server started (the publishes came before it).
    expect(text).toContain(`cairn_log_records_appended_total ${broker.log.nextLsn - nextLsnAtStart}`);
    expect(text).toContain(`cairn_log_next_lsn ${broker.log.nextLsn}`);
    expect(text).toContain('cairn_collection_documents{collection="sensor_readings"} 3');
    expect(text).toContain('cairn_mqtt_sessions{connected="true",persistent="false"} 1');
  });

  it('serves the console at / and its files under /console/', async () => {
    const response = await fetch(`${base}/`);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await response.text()).toContain('<script src="/console/console.js" type="module"></script>');
    const script = await fetch(`${base}/console/console.js`);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await fetch(`${base}/console/nothing.js`)).status).toBe(404);
    expect((await fetch(`${base}/console/..%2Fserver.ts`)).status).toBe(404);
  });
});

describe('HTTP API with users configured', () => {
  let server: HttpServerHandle;
  let base: string;

  beforeAll(async () => {
    const users = parseUsersFile(JSON.stringify({ users: [
      { username: 'ops', password: await hashPassword('s3cret') },
      { username: 'sensor', password: await hashPassword('x'), http: false },
    ] }), 'test users');
    const broker = Broker.open({ log: new MemoryLog() });
    server = await startHttpServer({ broker, host: '127.0.0.1', port: 0, logger: silentLogger(), users });
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server.close();
  });

  const basic = (user: string, password: string): RequestInit => ({ headers: { Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` } });

  it('401 with WWW-Authenticate without credentials, and for wrong ones', async () => {
    for (const init of [undefined, basic('ops', 'wrong'), basic('nobody', 's3cret')]) {
      const { status, body, headers } = await getJson(base, '/api/overview', init);
      expect(status).toBe(401);
      expect(body['error']).toBe('not_authorised');
      expect(headers.get('www-authenticate')).toBe('Basic realm="Cairn", charset="UTF-8"');
    }
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
  });

  it('403 for a user without the http permission, 200 for one with it', async () => {
    expect((await getJson(base, '/api/overview', basic('sensor', 'x'))).status).toBe(403);
    expect((await getJson(base, '/api/overview', basic('ops', 's3cret'))).status).toBe(200);
    expect((await fetch(`${base}/metrics`, basic('ops', 's3cret'))).status).toBe(200);
  });
});

describe('collections with MongoDB query semantics (mingo) over HTTP', () => {
  const things: ReadonlyArray<readonly [string, string]> = [
    ['things/1', '{"name": "Alpha", "tags": ["a", "b"], "size": {"h": 10, "w": 4}, "scores": [82, 85, 88]}'],
    ['things/2', '{"name": "beta", "tags": ["c"], "size": {"h": 3}, "scores": [75, 88, 89]}'],
    ['things/3', '{"name": "gamma", "tags": "a", "scores": [5, 25], "note": null}'],
  ];
  let server: HttpServerHandle;
  let base: string;
  const documents = async (query: Record<string, unknown>): Promise<Array<Record<string, unknown>>> => {
    const search = Object.entries(query).map(([name, value]) => `${name}=${encodeURIComponent(typeof value === 'string' ? value : JSON.stringify(value))}`).join('&');
    const { status, body } = await getJson(base, `/api/collections/things/documents?${search}`);
    expect(status, JSON.stringify(body)).toBe(200);
    return body['documents'] as Array<Record<string, unknown>>;
  };
  const idsOf = async (filter: unknown): Promise<unknown[]> => (await documents({ filter })).map((d) => d['_id']);

  beforeAll(async () => {
    server = await startHttpServer({ broker: await articleBroker(things, 'things/#:things'), host: '127.0.0.1', port: 0, logger: silentLogger() });
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server.close();
  });

  it('{"tags": "a"} matches an array holding "a" and a plain "a"', async () => {
    expect(await idsOf({ tags: 'a' })).toEqual([1, 3]);
  });

  it('$elemMatch needs one element meeting every condition; without it different elements may', async () => {
    expect(await idsOf({ scores: { $elemMatch: { $gte: 80, $lt: 85 } } })).toEqual([1]);
    expect(await idsOf({ scores: { $gt: 15, $lt: 20 } })).toEqual([3]);
  });

  it('$in, $regex with $options, $exists (null counts as present), dotted paths', async () => {
    expect(await idsOf({ tags: { $in: ['c', 'z'] } })).toEqual([2]);
    expect(await idsOf({ name: { $regex: '^a', $options: 'i' } })).toEqual([1]);
    expect(await idsOf({ note: { $exists: true } })).toEqual([3]);
    expect(await idsOf({ 'size.h': { $gt: 5 } })).toEqual([1]);
    expect(await idsOf({ 'size.w': { $exists: false } })).toEqual([2, 3]);
  });

  it('sort, skip, limit and projection', async () => {
    const page = await documents({ sort: { 'size.h': -1 }, skip: '1', limit: '1', projection: { name: 1, _id: 0 } });
    expect(page).toEqual([{ name: 'beta' }]);
  });

  it('count answers how many match, without the documents', async () => {
    const all = await getJson(base, '/api/collections/things/count');
    expect(all).toMatchObject({ status: 200, body: { collection: 'things', count: 3 } });
    const tagged = await getJson(base, `/api/collections/things/count?filter=${encodeURIComponent('{"tags":"a"}')}`);
    expect(tagged.body).toEqual({ collection: 'things', count: 2, examined: 3, partial: false });
    expect((await getJson(base, '/api/collections/nothing/count')).status).toBe(404);
  });

  it.each([
    ['/api/collections/things/documents?filtr={}', "unknown query parameter 'filtr' for /api/collections/things/documents; accepted: filter, sort, skip, limit, projection"],
    ['/api/collections/things/count?limit=1', "unknown query parameter 'limit' for /api/collections/things/count; accepted: filter"],
    [`/api/collections/things/documents?filter=${encodeURIComponent('{"name":{"$regex":"("}}')}`, 'the filter is not valid: Invalid regular expression: /(/: Unterminated group'],
    [`/api/collections/things/documents?filter=${encodeURIComponent('{"$where":"1"}')}`, "the filter is not valid: $where operator requires 'scriptEnabled' option to be true."],
    [`/api/collections/things/count?filter=${encodeURIComponent('{"tags":{"$foo":1}}')}`, 'the filter is not valid: unknown query operator $foo'],
    [`/api/collections/things/documents?projection=${encodeURIComponent('{"a":1,"b":0}')}`, 'the projection is not valid: Cannot do exclusion and inclusion in projection.'],
  ])('400 with a one-line reason: %s', async (path, reason) => {
    const { status, body } = await getJson(base, path);
    expect(status).toBe(400);
    expect(body).toEqual({ error: 'bad_request', reason });
    expect(reason).not.toContain('\n');
  });
});
