/**
 * A metrics exposition within its stats interval is answered by the HTTP
 * listener's socket thread itself (src/http/kept-answers.js): while the
 * broker's event loop is stalled (stalled-loop.ts), a second GET of /metrics
 * or /metrics/per-object with the same Accept-Encoding and Authorization gets
 * the same bytes, and anything else (another encoding, other or wrong
 * credentials, another path) waits for the loop: it is forwarded, never
 * answered from what was kept, and a wrong password gets 401 once the loop
 * runs. Once the interval has passed the answer shows the changes.
 * Real HTTP against a real Broker on a MemoryLog, with a users file.
 */
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword, parseUsersFile } from '../../src/auth/users.js';
import { Broker } from '../../src/core/broker.js';
import { MemoryLog } from '../../src/core/record-log.js';
import { startHttpServer, type HttpServerHandle } from '../../src/http/server.js';
import { silentLogger } from '../../src/logger.js';
import { Metrics } from '../../src/metrics.js';
import { until } from '../support/kit.js';
import { whileLoopStalled } from '../support/stalled-loop.js';

/** Long enough that no test here sees it end unless it waits for that. */
const statsIntervalMs = 60_000;
const owner = 'connection-1';
let broker: Broker;
let server: HttpServerHandle;
const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const ops = basic('ops', 's3cret');

function declare(target: Broker, name: string): void {
  target.amqp.declareQueue(name, { passive: false, durable: false, exclusive: false, autoDelete: false, arguments: {}, owner });
}

beforeAll(async () => {
  const users = parseUsersFile(JSON.stringify({ users: [{ username: 'ops', password: await hashPassword('s3cret') }] }), 'test users');
  broker = Broker.open({ log: new MemoryLog() });
  server = await startHttpServer({ broker, host: '127.0.0.1', port: 0, logger: silentLogger(), metrics: new Metrics(), users, statsIntervalMs });
});

afterAll(async () => {
  await server.close();
});

/** GETs `path` with `headers` in a child process while the loop is stalled: `STATUS BODY-SHA256`, or NO ANSWER. */
function stalledGet(path: string, headers: Record<string, string>): string {
  const { stdout, stderr } = whileLoopStalled(server.port, `
import { createHash } from 'node:crypto';
import { request } from 'node:http';
request({ host: '127.0.0.1', port, path: ${JSON.stringify(path)}, headers: ${JSON.stringify(headers)} }, (response) => {
  const hash = createHash('sha256');
  response.on('data', (chunk) => hash.update(chunk));
  response.on('end', () => { console.log(response.statusCode + ' ' + hash.digest('hex')); process.exit(0); });
}).end();
`, 1_000);
  expect(stderr).toBe('');
  return stdout.trim();
}

/** A GET on a connection of its own (the stalls above outlast the listener's keep-alive timeout). */
function get(path: string, headers: Record<string, string>): Promise<{ status: number; digest: string; text: string }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port: server.port, path, headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const bytes = Buffer.concat(chunks);
        resolve({ status: response.statusCode ?? 0, digest: createHash('sha256').update(bytes).digest('hex'), text: bytes.toString() });
      });
    }).on('error', reject).end();
  });
}

describe('metrics expositions answered by the socket thread within the stats interval', () => {
  it('gives the same bytes to the same request while the loop is stalled, and forwards every other request', async () => {
    for (let i = 0; i < 1_000; i++) declare(broker, `filler-${i}`);
    const plain = { Authorization: ops, 'Accept-Encoding': 'identity' };
    const first = await get('/metrics/per-object', plain);
    expect(first.status).toBe(200);
    expect(first.text).toContain('queue="filler-999"');
    expect((await get('/metrics', plain)).status).toBe(200);

    declare(broker, 'declared-later');
    expect(stalledGet('/metrics/per-object', plain)).toBe(`200 ${first.digest}`);
    expect(stalledGet('/metrics', plain)).toMatch(/^200 [0-9a-f]{64}$/);

    // Not what was kept: these wait for the loop, which is stalled.
    expect(stalledGet('/metrics/per-object', { ...plain, 'Accept-Encoding': 'gzip' })).toBe('NO ANSWER');
    expect(stalledGet('/metrics/per-object', { ...plain, Authorization: basic('ops', 'wrong') })).toBe('NO ANSWER');
    expect(stalledGet('/metrics/per-object', { 'Accept-Encoding': 'identity' })).toBe('NO ANSWER');
    expect(stalledGet('/metrics/per-object?x=1', plain)).toBe('NO ANSWER');
    expect(stalledGet('/api/overview', plain)).toBe('NO ANSWER');

    // Forwarded, they are answered by the loop as ever.
    expect((await get('/metrics/per-object', { ...plain, Authorization: basic('ops', 'wrong') })).status).toBe(401);
    expect((await get('/metrics/per-object', { 'Accept-Encoding': 'identity' })).status).toBe(401);
    const gzipped = await get('/metrics/per-object', { ...plain, 'Accept-Encoding': 'gzip' });
    expect(gzipped.status).toBe(200);
    expect(gzipped.text).not.toContain('declared-later');
  });

  it('shows the changes once the interval has passed', async () => {
    const shorter = await startHttpServer({ broker, host: '127.0.0.1', port: 0, logger: silentLogger(), metrics: new Metrics(), statsIntervalMs: 200 });
    try {
      const url = `http://127.0.0.1:${shorter.port}/metrics/per-object`;
      expect(await (await fetch(url)).text()).not.toContain('queue="declared-after-interval"');
      declare(broker, 'declared-after-interval');
      await until(async () => (await (await fetch(url)).text()).includes('queue="declared-after-interval"'), 'the queue declared after the render in a render after the interval');
    } finally {
      await shorter.close();
    }
  });
});
