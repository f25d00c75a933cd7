/**
 * The HTTP listener: a read-only JSON API under /api, Prometheus metrics at
 * /metrics and a tiny overview page at /. Plain node:http, one flat route
 * table, one place (`answerError`) that turns errors into `{error, detail}`
 * responses with their status.
 *
 * Authentication: when users are configured (users.size > 0) every request
 * needs HTTP Basic credentials of a user allowed on 'http' [RFC 7617]; missing
 * or wrong ones get 401 with WWW-Authenticate, a user without the http
 * permission 403. With no users the API is open, like the other listeners.
 *
 * The API never writes records: it reads the broker's projections and
 * runtime synchronously, so every answer is a consistent view of one moment.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Users } from '../auth/users.js';
import type { Broker } from '../core/broker.js';
import type { Logger } from '../logger.js';
import { Metrics } from '../metrics.js';
import { logPositionOf } from './log-position.js';
import { overviewPage } from './page.js';
import { QueryError } from './query.js';
import { RateSampler, rateSampleMs } from './rates.js';
import { bindingsView, collectionsView, documentsView, exchangesView, HttpError, logView, queuesView, sessionsView } from './views.js';

export interface HttpServerOptions {
  readonly broker: Broker;
  readonly host: string;
  /** 0 picks a free port; the returned `port` says which. */
  readonly port: number;
  readonly logger: Logger;
  /** With users.size > 0, every request needs Basic credentials of a user allowed on 'http'. */
  readonly users?: Users;
  /** The broker's metrics; without it the server makes its own (gauges only, counters stay at 0). */
  readonly metrics?: Metrics;
  readonly version?: string;
  /** Open client connections by protocol, for the overview; defaults to what `metrics` counted. */
  readonly connections?: () => Readonly<Record<string, number>>;
  /** Wall clock (ms) for uptime and rates. Default Date.now. */
  readonly clock?: () => number;
}

export interface HttpServerHandle {
  readonly port: number;
  close(): Promise<void>;
}

interface RequestContext {
  readonly url: URL;
  readonly parameters: readonly string[];
}

interface Answer {
  readonly status?: number;
  readonly contentType?: string;
  readonly body: string;
}

type Handler = (context: RequestContext) => Answer | Promise<Answer>;

interface Route {
  readonly pattern: RegExp;
  readonly handler: Handler;
}

const authenticationRealm = 'Basic realm="Cairn", charset="UTF-8"';

function json(body: unknown, status = 200): Answer {
  return { status, contentType: 'application/json; charset=utf-8', body: `${JSON.stringify(body, null, 2)}\n` };
}

export async function startHttpServer(options: HttpServerOptions): Promise<HttpServerHandle> {
  const { broker, logger } = options;
  const clock = options.clock ?? Date.now;
  const metrics = options.metrics ?? new Metrics();
  metrics.collectFrom(broker);
  const startedAt = clock();
  const sampler = new RateSampler(metrics, () => broker.log.nextLsn, clock);
  const timer = setInterval(() => sampler.sample(), rateSampleMs);
  timer.unref();

  const overview = (): unknown => ({
    version: options.version ?? null,
    startedAt: new Date(startedAt).toISOString(),
    uptimeSeconds: Math.round((clock() - startedAt) / 1000),
    log: (({ segments: _segments, ...position }) => ({ ...position, bytes: position.bytes ?? null, segments: _segments?.length ?? null }))(logPositionOf(broker.log)),
    connections: options.connections?.() ?? metrics.connectionCount(),
    sessions: sessionCounts(broker),
    queues: queueCounts(broker),
    collections: broker.state.collections.size,
    messages: metrics.totals(),
    rates: sampler.rates(),
    recovery: broker.recovery ?? null,
  });

  const routes: Route[] = [
    { pattern: /^\/$/, handler: () => ({ contentType: 'text/html; charset=utf-8', body: overviewPage(options.version) }) },
    { pattern: /^\/api\/overview$/, handler: () => json(overview()) },
    { pattern: /^\/api\/sessions$/, handler: () => json(sessionsView(broker)) },
    { pattern: /^\/api\/exchanges$/, handler: () => json(exchangesView(broker)) },
    { pattern: /^\/api\/queues$/, handler: () => json(queuesView(broker)) },
    { pattern: /^\/api\/bindings$/, handler: () => json(bindingsView(broker)) },
    { pattern: /^\/api\/collections$/, handler: () => json(collectionsView(broker)) },
    { pattern: /^\/api\/collections\/([^/]+)\/documents$/, handler: ({ url, parameters }) => json(documentsView(broker, parameters[0] ?? '', url.searchParams)) },
    { pattern: /^\/api\/log$/, handler: () => json(logView(broker)) },
    { pattern: /^\/metrics$/, handler: async () => ({ contentType: metrics.contentType, body: await metrics.text() }) },
  ];

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => answerError(response, error, logger));
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    await authenticate(request, options.users);
    const url = new URL(request.url ?? '/', 'http://cairn.invalid');
    const { route, parameters } = findRoute(routes, url.pathname);
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      throw new HttpError(405, 'method-not-allowed', `${request.method ?? '?'} is not allowed on ${url.pathname}: the API is read-only, use GET`, { Allow: 'GET, HEAD' });
    }
    const answer = await route.handler({ url, parameters });
    send(response, answer.status ?? 200, answer.contentType ?? 'text/plain; charset=utf-8', request.method === 'HEAD' ? '' : answer.body);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (error) => logger.error({ err: error }, 'HTTP listener error'));
  const port = (server.address() as AddressInfo).port;
  logger.info({ host: options.host, port }, 'HTTP listening');
  return { port, close: () => closeServer(server, timer) };
}

function findRoute(routes: readonly Route[], pathname: string): { route: Route; parameters: string[] } {
  for (const route of routes) {
    const match = route.pattern.exec(pathname);
    if (match) {
      const parameters = match.slice(1).map((part) => {
        try {
          return decodeURIComponent(part);
        } catch {
          throw new HttpError(400, 'bad-request', `path part '${part}' is not valid percent-encoding`);
        }
      });
      return { route, parameters };
    }
  }
  throw new HttpError(404, 'not-found', `no route for ${pathname}: see /api/overview, /api/sessions, /api/exchanges, /api/queues, /api/bindings, /api/collections, /api/log, /metrics`);
}

async function authenticate(request: IncomingMessage, users: Users | undefined): Promise<void> {
  if (users === undefined || users.size === 0) return;
  const header = request.headers.authorization;
  const match = header === undefined ? null : /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match) throw new HttpError(401, 'unauthorized', 'credentials required: send HTTP Basic authentication', { 'WWW-Authenticate': authenticationRealm });
  const decoded = Buffer.from(match[1] ?? '', 'base64');
  const colon = decoded.indexOf(0x3a);
  if (colon < 0) throw new HttpError(401, 'unauthorized', 'malformed Basic credentials: expected user:password', { 'WWW-Authenticate': authenticationRealm });
  const username = decoded.subarray(0, colon).toString('utf8');
  const outcome = await users.authenticate('http', username, decoded.subarray(colon + 1));
  if (outcome === 'allowed') return;
  if (outcome === 'not-authorized') throw new HttpError(403, 'forbidden', `user '${username}' may not use the HTTP API`);
  if (outcome === 'busy') throw new HttpError(503, 'busy', 'too many logins are being checked at once: retry shortly', { 'Retry-After': '1' });
  throw new HttpError(401, 'unauthorized', 'wrong user name or password', { 'WWW-Authenticate': authenticationRealm });
}

/** The one place that turns an error into a response. */
function answerError(response: ServerResponse, error: unknown, logger: Logger): void {
  if (error instanceof HttpError) {
    sendError(response, error.status, error.error, error.message, error.headers);
  } else if (error instanceof QueryError) {
    sendError(response, 400, 'bad-query', error.message);
  } else {
    logger.error({ err: error }, 'HTTP request failed');
    sendError(response, 500, 'internal', 'the request failed inside the server; see its log');
  }
}

function sendError(response: ServerResponse, status: number, error: string, detail: string, headers: Readonly<Record<string, string>> = {}): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  for (const [name, value] of Object.entries(headers)) response.setHeader(name, value);
  send(response, status, 'application/json; charset=utf-8', `${JSON.stringify({ error, detail })}\n`);
}

function send(response: ServerResponse, status: number, contentType: string, body: string): void {
  response.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
  response.end(body);
}

function sessionCounts(broker: Broker): { total: number; connected: number; persistent: number; pending: number } {
  let connected = 0;
  let persistent = 0;
  let pending = 0;
  for (const session of broker.sessions.values()) {
    if (session.link !== undefined) connected++;
    if (session.persistent) persistent++;
    pending += session.state.pending.size;
  }
  return { total: broker.sessions.size, connected, persistent, pending };
}

function queueCounts(broker: Broker): { total: number; ready: number; unacked: number; consumers: number } {
  let ready = 0;
  let unacked = 0;
  let consumers = 0;
  for (const queue of broker.queues.values()) {
    ready += queue.readyCount;
    unacked += queue.unacked.size;
    consumers += queue.consumers.length;
  }
  return { total: broker.queues.size, ready, unacked, consumers };
}

async function closeServer(server: Server, timer: NodeJS.Timeout): Promise<void> {
  clearInterval(timer);
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
