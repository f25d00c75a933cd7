// @ts-check
/**
 * The HTTP/HTTPS listener's sockets, on a thread of their own
 * (node:worker_threads; started by socket-thread-host.ts). Node's HTTP
 * machinery (the parser, ServerResponse, headers) and the kernel's loopback
 * writes cost the broker's event loop more per scrape request than rendering
 * the answer (issue 15: ~5.9 ms a scrape round of 1,000 queues, most of it
 * not JavaScript), and every such stretch delays an MQTT round trip. Here
 * they run beside the loop; the broker's thread keeps the route table, auth
 * and the rendering, which read its projections.
 *
 * This thread enforces every limit of limits.ts (the connection cap, header
 * size, the timeouts) and request-body.ts's body bound: a request is read
 * whole and sent to the broker's thread as ONE message {id, method, url,
 * headers, body}; a body over the bound is answered 413 here and never
 * forwarded. The answer comes back as one message {id, status, headers, body}
 * and is written in one go (this loop serves no MQTT client, so nothing waits
 * behind a long write). An answer the broker's thread marks as unchanging for
 * a while (a metrics exposition within its stats interval: keepForMs) is
 * given again from here to the same request, never forwarded meanwhile
 * (kept-answers.js). Log lines go to the broker's logger as messages.
 *
 * Plain JavaScript importing only node: built-ins and kept-answers.js, the
 * two copied into dist by tools/copy-plain-files.mjs: a worker's entry is
 * loaded by Node itself, and
 * Node 20 cannot load a .ts file, while vitest runs src/**.ts in-process; a
 * .js beside the sources loads the same from src and from dist.
 */
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { parentPort, workerData } from 'node:worker_threads';
import { KeptAnswers, keptAnswerKey } from './kept-answers.js';

/** @typedef {import('./socket-thread-protocol.js').SocketThreadSettings} SocketThreadSettings */
/** @typedef {import('./socket-thread-protocol.js').SocketThreadEvent} SocketThreadEvent */
/** @typedef {import('./socket-thread-protocol.js').SocketThreadCommand} SocketThreadCommand */
/** @typedef {import('./socket-thread-protocol.js').LogLevel} LogLevel */
/** @typedef {import('node:http').IncomingMessage} IncomingMessage */
/** @typedef {import('node:http').ServerResponse} ServerResponse */
/** @typedef {import('node:tls').TLSSocket} TLSSocket */

if (parentPort === null) throw new Error('socket-thread.js runs as a worker (socket-thread-host.ts starts it)');
const port = parentPort;
const settings = /** @type {SocketThreadSettings} */ (workerData);

/** @param {SocketThreadEvent} event @param {ArrayBuffer[]} [transfer] */
function post(event, transfer = []) {
  port.postMessage(event, transfer);
}

/** @param {LogLevel} level @param {Record<string, unknown>} fields @param {string} message */
function log(level, fields, message) {
  post({ kind: 'log', level, fields, message });
}

/** @param {unknown} error */
function errorFields(error) {
  if (!(error instanceof Error)) return { message: String(error) };
  const code = /** @type {{ code?: unknown }} */ (error).code;
  return { message: error.message, ...(typeof code === 'string' ? { code } : {}), stack: error.stack };
}

/** Responses waiting for the broker's answer, by request id, with their kept-answers.js key (GET only). */
/** @type {Map<number, { readonly response: ServerResponse, readonly key: string | undefined }>} */
const waiting = new Map();
let nextId = 0;
/** Answers the broker's thread said stay the same for a while (PostedAnswer.keepForMs): given again from here. */
const kept = new KeptAnswers();

/**
 * 413 in RabbitMQ's error shape, as the broker's thread writes every other error (server.ts, answerError). The
 * connection is closed after it: the rest of an oversized body is not worth reading.
 * @param {ServerResponse} response @param {string} reason
 */
function refuseBody(response, reason) {
  const body = Buffer.from(`${JSON.stringify({ error: 'payload_too_large', reason })}\n`);
  response.writeHead(413, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length, 'Cache-Control': 'no-store', Connection: 'close' });
  response.end(body);
}

/** @param {IncomingMessage} request @param {ServerResponse} response */
function onRequest(request, response) {
  const bytesMax = settings.requestBodyBytesMax;
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > bytesMax) {
    refuseBody(response, `request body of ${declared} bytes is over the ${bytesMax}-byte limit`);
    return;
  }
  /** @type {Buffer[]} */
  const chunks = [];
  let bytes = 0;
  let refused = false;
  request.on('data', (/** @type {Buffer} */ chunk) => {
    if (refused) return;
    bytes += chunk.length;
    if (bytes > bytesMax) {
      refused = true;
      chunks.length = 0;
      refuseBody(response, `request body is over the ${bytesMax}-byte limit`);
      return;
    }
    chunks.push(chunk);
  });
  request.on('end', () => {
    if (refused || response.destroyed) return;
    const key = bytes === 0 ? keptAnswerKey(request.method, request.url, request.headers) : undefined;
    const answer = key === undefined ? undefined : kept.get(key);
    if (answer !== undefined) {
      response.writeHead(answer.status, answer.headers);
      response.end(answer.body);
      return;
    }
    // Its own ArrayBuffer, to transfer: Buffer.concat may return a slice of node's shared pool.
    const body = new Uint8Array(bytes);
    let at = 0;
    for (const chunk of chunks) {
      body.set(chunk, at);
      at += chunk.length;
    }
    const id = nextId++;
    waiting.set(id, { response, key });
    response.once('close', () => waiting.delete(id));
    post({ kind: 'request', id, method: request.method ?? 'GET', url: request.url ?? '/', headers: request.headers, body }, [body.buffer]);
  });
}

/** @param {Extract<SocketThreadCommand, { kind: 'answer' }>} answer */
function writeAnswer(answer) {
  const entry = waiting.get(answer.id);
  if (entry === undefined) return; // the client went away meanwhile
  waiting.delete(answer.id);
  const body = Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength);
  if (entry.key !== undefined && answer.keepForMs !== undefined) kept.keep(entry.key, { status: answer.status, headers: answer.headers, body }, answer.keepForMs);
  if (entry.response.destroyed) return;
  entry.response.writeHead(answer.status, answer.headers);
  entry.response.end(body);
}

/** @param {Uint8Array | string | undefined} bytes */
function asBuffer(bytes) {
  return bytes instanceof Uint8Array ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : bytes;
}

/** TLS options as posted (Buffers arrive as Uint8Arrays) with Buffers again. @param {import('node:tls').TlsOptions} options */
function tlsOptions(options) {
  const { cert, key, ca, ...rest } = options;
  return {
    ...rest,
    ...(cert === undefined ? {} : { cert: /** @type {Buffer} */ (asBuffer(/** @type {Uint8Array} */ (cert))) }),
    ...(key === undefined ? {} : { key: /** @type {Buffer} */ (asBuffer(/** @type {Uint8Array} */ (key))) }),
    ...(ca === undefined ? {} : { ca: /** @type {Buffer} */ (asBuffer(/** @type {Uint8Array} */ (ca))) }),
  };
}

function createLimitedServer() {
  const limitOptions = {
    maxHeaderSize: settings.headerBytesMax,
    requestTimeout: settings.requestTimeoutMs,
    headersTimeout: settings.headersTimeoutMs,
    keepAliveTimeout: settings.keepAliveTimeoutMs,
    connectionsCheckingInterval: settings.timeoutCheckIntervalMs,
  };
  const tls = settings.tls;
  const server = tls === undefined ? createServer(limitOptions, onRequest) : createHttpsServer({ ...tlsOptions(tls.serverOptions), ...limitOptions }, onRequest);
  if (tls !== undefined) {
    server.on('tlsClientError', (/** @type {Error} */ error) => log('debug', { err: error.message }, 'HTTPS handshake failed'));
    // TlsCredentials.admits: in optional mode a client that sent a certificate that does not verify is cut off.
    server.on('secureConnection', (/** @type {TLSSocket} */ socket) => {
      if (tls.clientCertificates === 'optional' && !socket.authorized && Object.keys(socket.getPeerCertificate()).length > 0) socket.destroy();
    });
  }
  server.maxConnections = settings.connectionsMax;
  // No 'timeout' listener: node destroys a socket idle this long.
  server.timeout = settings.idleTimeoutMs;
  server.on('drop', () => log('warn', { connectionsMax: settings.connectionsMax }, 'HTTP connection refused: connectionsMax reached'));
  return server;
}

const server = createLimitedServer();

port.on('message', (/** @type {SocketThreadCommand} */ command) => {
  switch (command.kind) {
    case 'answer':
      writeAnswer(command);
      break;
    case 'secure-context':
      /** @type {import('node:https').Server} */ (server).setSecureContext(tlsOptions(command.options));
      break;
    case 'close':
      server.close(() => post({ kind: 'closed' }));
      server.closeAllConnections();
      break;
  }
});

/** @param {Error} error */
const listenFailed = (error) => {
  const { code, errno, syscall } = /** @type {NodeJS.ErrnoException} */ (error);
  post({ kind: 'listen-failed', error: { message: error.message, ...(code === undefined ? {} : { code }), ...(errno === undefined ? {} : { errno }), ...(syscall === undefined ? {} : { syscall }) } });
};
server.once('error', listenFailed);
server.listen(settings.port, settings.host, () => {
  server.off('error', listenFailed);
  server.on('error', (error) => log('error', { err: errorFields(error) }, 'HTTP listener error'));
  const address = server.address();
  post({ kind: 'listening', port: typeof address === 'object' && address !== null ? address.port : settings.port });
});
