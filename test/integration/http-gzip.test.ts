/**
 * Answers gzipped for clients that ask (src/http/answer-encoding.ts, server.ts)
 * over real HTTP against an in-process Cairn with 500 queues (answers of
 * 70-160 KB, past gzipBytesMin): what a Prometheus or a browser
 * (Accept-Encoding: gzip) gets decodes to what a client that does not ask
 * gets, byte for byte where the answer does not change between two requests;
 * an answer that changed is not the one gzipped before (gzip-memo.ts);
 * smaller answers and HEAD go unencoded; every answer says Vary:
 * Accept-Encoding.
 */
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../src/config.js';
import { gzipBytesMin } from '../../src/http/answer-encoding.js';
import { silentLogger } from '../../src/logger.js';
import { startCairn, type RunningCairn } from '../../src/server.js';
import { tempDirectory } from '../support/kit.js';
import { parseExposition } from '../support/prometheus-exposition.js';

const queueCount = 500;

interface Raw { readonly status: number; readonly headers: Record<string, string | string[] | undefined>; readonly body: Buffer }

describe('gzipped answers', () => {
  const data = tempDirectory('cairn-gzip-');
  let cairn: RunningCairn;

  /** node:http, which (unlike fetch) neither asks for nor decodes an encoding by itself. */
  const get = (path: string, acceptEncoding: string | undefined, method = 'GET'): Promise<Raw> => new Promise((resolve, reject) => {
    const headers = acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding };
    request({ host: '127.0.0.1', port: cairn.httpPort!, path, method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    }).on('error', reject).end();
  });

  beforeAll(async () => {
    cairn = await startCairn(parseServeArgs(['--data', data.path, '--mqtt-port', '0', '--amqp-port', '0', '--http-port', '0'], {}), silentLogger());
    for (let i = 0; i < queueCount; i++) {
      const response = await fetch(`http://127.0.0.1:${cairn.httpPort!}/api/queues/%2F/gzip-${i}`, { method: 'PUT', body: '{"durable":false}', headers: { 'content-type': 'application/json' } });
      expect(response.status).toBe(201);
    }
  });
  afterAll(async () => {
    await cairn?.close();
    data.remove();
  });

  it('queue lists gzipped decode to the identity answer, byte for byte', async () => {
    for (const path of ['/api/queues', '/api/queues?columns=name,durable,auto_delete,exclusive,messages_ready,messages_unacknowledged,consumers', '/api/queues/%2F']) {
      const plain = await get(path, undefined);
      const gzipped = await get(path, 'gzip');
      expect({ path, status: gzipped.status, encoding: gzipped.headers['content-encoding'], vary: gzipped.headers.vary }).toEqual({ path, status: 200, encoding: 'gzip', vary: 'Accept-Encoding' });
      expect({ path, encoding: plain.headers['content-encoding'], vary: plain.headers.vary }).toEqual({ path, encoding: undefined, vary: 'Accept-Encoding' });
      expect(Number(gzipped.headers['content-length'])).toBe(gzipped.body.length);
      expect(gzipped.body.length).toBeLessThan(plain.body.length / 4);
      expect(gunzipSync(gzipped.body).toString('utf8')).toBe(plain.body.toString('utf8'));
    }
  });

  it('/metrics/per-object gzipped decodes to the same families and series as the identity answer', async () => {
    const path = '/metrics/per-object';
    const plain = parseExposition((await get(path, 'identity')).body.toString('utf8'));
    const gzipped = await get(path, 'gzip');
    expect({ encoding: gzipped.headers['content-encoding'], type: gzipped.headers['content-type'] }).toEqual({ encoding: 'gzip', type: expect.stringMatching(/^text\/plain; version=0\.0\.4/) });
    const decoded = parseExposition(gunzipSync(gzipped.body).toString('utf8'));
    const series = (families: typeof plain): string[] => [...families.values()].flatMap((family) => family.samples.map((sample) => `${sample.name}${JSON.stringify(sample.labels)}`)).sort();
    expect(series(decoded)).toEqual(series(plain));
    expect(decoded.get('rabbitmq_queue_messages_ready')?.samples).toHaveLength(queueCount);
  });

  it('answers below gzipBytesMin, HEAD and clients that refuse gzip get identity', async () => {
    for (const path of ['/api/whoami', '/api/overview', '/metrics']) {
      const small = await get(path, 'gzip');
      expect({ path, small: small.body.length < gzipBytesMin, encoding: small.headers['content-encoding'] }).toEqual({ path, small: true, encoding: undefined });
    }
    const head = await get('/api/queues', 'gzip', 'HEAD');
    expect({ status: head.status, encoding: head.headers['content-encoding'], body: head.body.length }).toEqual({ status: 200, encoding: undefined, body: 0 });
    for (const refusal of ['gzip;q=0', 'deflate', '*;q=0', 'identity']) {
      const answer = await get('/api/queues', refusal);
      expect({ refusal, encoding: answer.headers['content-encoding'] }).toEqual({ refusal, encoding: undefined });
      expect(JSON.parse(answer.body.toString('utf8'))).toHaveLength(queueCount);
    }
  });

  it('a queue list asked for again after a queue changed decodes to the changed list, not to the answer gzipped before', async () => {
    const path = '/api/queues';
    const before = JSON.parse(gunzipSync((await get(path, 'gzip')).body).toString('utf8')) as Array<{ name: string; messages_ready: number }>;
    expect(before.find((queue) => queue.name === 'gzip-7')?.messages_ready).toBe(0);
    const published = await fetch(`http://127.0.0.1:${cairn.httpPort!}/api/exchanges/%2F/amq.default/publish`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ properties: {}, routing_key: 'gzip-7', payload: 'x', payload_encoding: 'string' }),
    });
    expect(await published.json()).toEqual({ routed: true });
    const after = JSON.parse(gunzipSync((await get(path, 'gzip')).body).toString('utf8')) as typeof before;
    expect(after.find((queue) => queue.name === 'gzip-7')?.messages_ready).toBe(1);
    expect(after).toHaveLength(before.length);
  });

  it('many gzipped and identity answers at once each decode whole (pooled answer buffers are not reused too early)', async () => {
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => get(i % 3 === 0 ? '/metrics/per-object' : '/api/queues', i % 2 === 0 ? 'gzip' : undefined)));
    for (const [i, answer] of answers.entries()) {
      const text = (answer.headers['content-encoding'] === 'gzip' ? gunzipSync(answer.body) : answer.body).toString('utf8');
      if (i % 3 === 0) expect(parseExposition(text).get('rabbitmq_queue_messages_ready')?.samples).toHaveLength(queueCount);
      else expect(JSON.parse(text)).toHaveLength(queueCount);
    }
  });
});
