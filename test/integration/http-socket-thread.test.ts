/**
 * The HTTP listener's sockets on a thread of their own (src/http/socket-thread.js):
 * while the broker's event loop is stalled (this thread blocked in spawnSync,
 * which runs the client as a child process), the listener still accepts a
 * connection and times out a slow-headers client with 408, and answers a
 * body over requestBodyBytesMax with 413, declared or streamed, without
 * forwarding it: the queue it was published to stays empty. close() leaves
 * nothing that keeps the process alive (a child process on the compiled
 * server exits on its own after it), and a request body within the bound
 * still reaches its handler. A socket thread that dies of a fault is logged
 * and started again on the same port.
 */
import { resolve } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { MemoryLog } from '../../src/core/record-log.js';
import { requestBodyBytesMax } from '../../src/http/management/request-body.js';
import { startHttpServer, type HttpServerHandle } from '../../src/http/server.js';
import { restartDelayMs, startSocketThread } from '../../src/http/socket-thread-host.js';
import { silentLogger } from '../../src/logger.js';
import { until } from '../support/kit.js';
import { runModule, whileLoopStalled as clientWhileLoopStalled } from '../support/stalled-loop.js';

const headersTimeoutMs = 300;
let broker: Broker;
let http: HttpServerHandle;

beforeAll(async () => {
  broker = Broker.open({ log: new MemoryLog() });
  http = await startHttpServer({ broker, host: '127.0.0.1', port: 0, logger: silentLogger(), limits: { headersTimeoutMs, requestTimeoutMs: 20_000 } });
});

afterAll(async () => {
  await http.close();
  await broker.flush();
});

/** whileLoopStalled against this file's server; stderr must be empty. */
function whileLoopStalled(client: string, deadlineMs = 10_000): string {
  const child = clientWhileLoopStalled(http.port, client, deadlineMs);
  expect(child.stderr).toBe('');
  return child.stdout;
}

/** A raw HTTP exchange in the child: writes `request` (then `stream` bytes of a chunked body, if any) and prints the first line answered. */
const rawExchange = (request: string, stream = 0): string => `
import { connect } from 'node:net';
const socket = connect(port, '127.0.0.1');
let received = '';
socket.on('data', (chunk) => {
  received += chunk.toString('latin1');
  const end = received.indexOf('\\r\\n\\r\\n');
  if (end < 0) return;
  const length = Number(/content-length: *(\\d+)/i.exec(received)?.[1] ?? 0);
  if (received.length < end + 4 + length) return;
  console.log(received.slice(0, received.indexOf('\\r\\n')) + ' ' + received.slice(end + 4, end + 4 + length).trim());
  process.exit(0);
});
socket.on('close', () => { console.log(received.split('\\r\\n')[0] || 'CLOSED'); process.exit(0); });
socket.on('error', () => undefined);
socket.write(${JSON.stringify(request)});
let left = ${stream};
const piece = Buffer.alloc(1 << 20, 0x61);
const more = () => {
  while (left > 0) {
    const size = Math.min(left, piece.length);
    left -= size;
    const last = left === 0;
    socket.write(size.toString(16) + '\\r\\n');
    socket.write(piece.subarray(0, size));
    if (!socket.write(last ? '\\r\\n0\\r\\n\\r\\n' : '\\r\\n')) return void socket.once('drain', more);
  }
};
if (left > 0) more();
`;

describe('the HTTP listener on its socket thread', () => {
  it('accepts a connection and times out a slow-headers client with 408 while the broker\'s loop is stalled', () => {
    const started = Date.now();
    const answered = whileLoopStalled(rawExchange('GET /api/overview HTTP/1.1\r\nHost: cairn\r\nX-Slow: a'));
    expect(answered).toMatch(/^HTTP\/1\.1 408/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(headersTimeoutMs - 50);
  });

  it('answers a body over requestBodyBytesMax with 413 without forwarding it, declared or streamed, while the loop is stalled', async () => {
    const declared = await fetch(`http://127.0.0.1:${http.port}/api/queues/%2F/big`, { method: 'PUT', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(declared.status).toBe(201);
    const publish = 'POST /api/exchanges/%2F/amq.default/publish HTTP/1.1\r\nHost: cairn\r\nContent-Type: application/json\r\n';
    expect(whileLoopStalled(rawExchange(`${publish}Content-Length: ${requestBodyBytesMax + 1}\r\n\r\n`))).toBe(
      `HTTP/1.1 413 Payload Too Large {"error":"payload_too_large","reason":"request body of ${requestBodyBytesMax + 1} bytes is over the ${requestBodyBytesMax}-byte limit"}\n`,
    );
    expect(whileLoopStalled(rawExchange(`${publish}Transfer-Encoding: chunked\r\n\r\n`, requestBodyBytesMax + 1))).toBe(
      `HTTP/1.1 413 Payload Too Large {"error":"payload_too_large","reason":"request body is over the ${requestBodyBytesMax}-byte limit"}\n`,
    );
    // Had either been forwarded, it would be answered before this request (one channel, in order): nothing was published.
    const queue = await (await fetch(`http://127.0.0.1:${http.port}/api/queues/%2F/big`)).json() as { messages: number };
    expect(queue.messages).toBe(0);
    const published = await fetch(`http://127.0.0.1:${http.port}/api/exchanges/%2F/amq.default/publish`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ properties: {}, routing_key: 'big', payload: 'x'.repeat(1 << 20), payload_encoding: 'string' }),
    });
    expect(await published.json()).toEqual({ routed: true });
  });

  it('close() leaves nothing that keeps the process alive (the compiled server in a child process exits on its own)', () => {
    const dist = resolve(import.meta.dirname, '../../dist/src');
    const script = `
import { Broker } from ${JSON.stringify(`${dist}/core/broker.js`)};
import { MemoryLog } from ${JSON.stringify(`${dist}/core/record-log.js`)};
import { startHttpServer } from ${JSON.stringify(`${dist}/http/server.js`)};
import { silentLogger } from ${JSON.stringify(`${dist}/logger.js`)};
const broker = Broker.open({ log: new MemoryLog() });
const http = await startHttpServer({ broker, host: '127.0.0.1', port: 0, logger: silentLogger() });
const answer = await fetch('http://127.0.0.1:' + http.port + '/api/overview', { headers: { connection: 'keep-alive' } });
console.log(answer.status);
await http.close();
await broker.flush();
`;
    const child = runModule(script, 20_000);
    expect({ stdout: child.stdout, stderr: child.stderr, status: child.status, signal: child.signal }).toEqual({ stdout: '200\n', stderr: '', status: 0, signal: null });
  });

  it('a socket thread that dies of a fault is logged as an error and started again on the same port', async () => {
    const lines: Array<{ level: number; msg: string }> = [];
    const logger = pino({ level: 'info' }, new Writable({ write: (chunk: Buffer, _encoding, done) => { lines.push(JSON.parse(chunk.toString('utf8')) as { level: number; msg: string }); done(); } }));
    const settings = {
      host: '127.0.0.1', port: 0, connectionsMax: 16, headerBytesMax: 16 * 1024, requestTimeoutMs: 5_000, headersTimeoutMs: 5_000,
      idleTimeoutMs: 5_000, keepAliveTimeoutMs: 1_000, timeoutCheckIntervalMs: 1_000, requestBodyBytesMax,
    };
    const ok = new TextEncoder().encode('ok');
    const thread = await startSocketThread(settings, async (request) => ({ status: request.url === '/fail' ? 599 : 200, headers: { 'Content-Length': 2 }, body: ok.slice() }), logger, undefined, new URL('./fixtures/failing-socket-thread.mjs', import.meta.url));
    try {
      const get = async (path: string): Promise<number> => (await fetch(`http://127.0.0.1:${thread.port}${path}`)).status;
      expect(await get('/')).toBe(200);
      const diedAt = Date.now();
      expect(await get('/fail')).toBe(599); // written, then the fault
      await until(async () => (await get('/').catch(() => 0)) === 200, 'the listener answering again on its port', 10_000);
      expect(Date.now() - diedAt).toBeGreaterThanOrEqual(restartDelayMs - 100);
      expect(lines.filter((line) => line.level >= 50).map((line) => line.msg)).toContain('HTTP listener thread stopped unexpectedly: starting it again');
    } finally {
      await thread.close();
    }
    await expect(fetch(`http://127.0.0.1:${thread.port}/`)).rejects.toThrow();
  });
});
