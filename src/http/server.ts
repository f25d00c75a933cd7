/**
 * The HTTP listener: the management API under /api (RabbitMQ's routes and
 * shapes, see management/routes.ts, plus Cairn's own resources: MQTT
 * sessions, collections, the log), Prometheus metrics at /metrics and the
 * console at /. Plain node:http, one flat route table with one handler per
 * method, one place (`answerError`) that turns errors into RabbitMQ's
 * `{error, reason}` bodies with their status.
 *
 * Authentication: when users are configured (users.size > 0) every request
 * needs HTTP Basic credentials of a user allowed on 'http' [RFC 7617]; missing
 * or wrong ones get 401 with WWW-Authenticate, a user without the http
 * permission 403. With no users the API is open, like the other listeners.
 *
 * Two threads: the listening socket and its connections are served by a
 * worker (socket-thread.js, started by socket-thread-host.ts), which parses
 * each request, reads its body and sends it here as one message; this
 * module, on the broker's event loop, authenticates, routes, runs the
 * handler (which reads the broker's projections) and sends the whole answer
 * back as one message, which the worker writes. Node's HTTP machinery and
 * the sockets' writes cost the loop more than the rendering did (issue 15),
 * and every such stretch delayed an MQTT round trip.
 *
 * Reads are views of the broker's projections and runtime at one moment:
 * large answers (queue lists, the per-queue metrics) copy their figures
 * first and are rendered in slices between which other clients are served
 * (answer-slices.ts); the metrics expositions read one family at a time
 * (each family one moment), and both are rendered at most once per stats
 * interval (`statsIntervalMs`, kept-exposition.ts; RabbitMQ's figures are
 * up to its 5 s statistics interval old too); within it the socket thread
 * answers the same request again itself (kept-answers.js). Collection queries, the log's records and traces
 * read the log in chunks between which other clients are served, over what
 * was durable when the request began. Changes (PUT, POST,
 * DELETE) are ordinary broker commands, recorded in the log like a client's.
 *
 * Limits (limits.ts), enforced by the worker: a connection cap, headers,
 * request and idle timeouts and the headers' size, so that no client holds
 * descriptors or connections the broker needs; bodies past
 * management/request-body.ts's bound are refused there and never reach this
 * thread.
 */
import { validateHeaderName, validateHeaderValue, type IncomingHttpHeaders } from 'node:http';
import type { TlsCredentials } from '../protocols/tls-credentials.js';
import type { Users } from '../auth/users.js';
import type { Broker } from '../core/broker.js';
import { DocumentReadError } from '../core/collection-documents.js';
import type { Logger } from '../logger.js';
import { Metrics } from '../metrics.js';
import type { ManagedConnection } from '../protocols/connection-description.js';
import { HttpError } from './http-error.js';
import { resolveHttpLimits, timeoutCheckIntervalMs, type HttpLimits } from './limits.js';
import { startSocketThread, type SocketThread } from './socket-thread-host.js';
import type { ForwardedRequest, PostedAnswer } from './socket-thread-protocol.js';
import { logPositionOf } from './log-position.js';
import { checkParameters } from './management/listing.js';
import { parseJsonObject, requestBodyBytesMax } from './management/request-body.js';
import { describeClients, type ListenerAddress } from './management/resources.js';
import { managementRoutes } from './management/routes.js';
import type { SystemFacts } from './management/system.js';
import { AnswerBytesPool } from './answer-bytes.js';
import { acceptsGzip, gzipBytesMin } from './answer-encoding.js';
import { GzipMemo } from './gzip-memo.js';
import { KeptExposition } from './kept-exposition.js';
import { loadConsoleFiles } from './console-files.js';
import { recentRecords, traceOf } from './log-records.js';
import { QueryError } from './query.js';
import { RateSampler, rateSampleMs } from './rates.js';
import { json, pooledAnswer, type Answer, type Method, type RequestContext, type Route } from './route.js';
import { collectionsView, countParameters, countView, documentsParameters, documentsView, logView, sessionsView, sharedSubscriptionsView } from './views.js';

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
  /** The live client connections of both front ends (/api/connections, /api/channels, /api/consumers). */
  readonly clients?: () => Iterable<ManagedConnection>;
  /** The broker's other listeners, for /api/overview. */
  readonly listeners?: readonly ListenerAddress[];
  /** Wall clock (ms) for uptime and rates. Default Date.now. */
  readonly clock?: () => number;
  /**
   * /metrics and /metrics/per-object are rendered at most once per this many ms of `clock` (kept-exposition.ts);
   * 0 (the default here; `cairn serve --stats-interval`, 5 s) renders each request.
   */
  readonly statsIntervalMs?: number;
  /** Overrides of defaultHttpLimits, checked at start. */
  readonly limits?: Partial<HttpLimits>;
  /** Serve HTTPS with these credentials (a second call of startHttpServer serves plain HTTP beside it). */
  readonly tls?: TlsCredentials | undefined;
}

export interface HttpServerHandle {
  readonly port: number;
  close(): Promise<void>;
}

const authenticationRealm = 'Basic realm="Cairn", charset="UTF-8"';
const methods: readonly Method[] = ['GET', 'PUT', 'POST', 'DELETE'];

export async function startHttpServer(options: HttpServerOptions): Promise<HttpServerHandle> {
  const { broker, logger } = options;
  const limits = resolveHttpLimits(options.limits);
  const scanLimits = { chunkDocuments: limits.queryChunkDocuments, chunkMs: limits.queryChunkMs, examinedMax: limits.queryDocumentsExaminedMax };
  const clock = options.clock ?? Date.now;
  const metrics = options.metrics ?? new Metrics();
  const clients = options.clients ?? ((): Iterable<ManagedConnection> => []);
  metrics.collectFrom(broker, options.clients);
  const startedAt = clock();
  const sampler = new RateSampler(metrics, () => broker.log.nextLsn, clock);
  const timer = setInterval(() => sampler.sample(), rateSampleMs);
  timer.unref();
  const listeners: ListenerAddress[] = [...(options.listeners ?? [])];

  /** Cairn's own overview: what RabbitMQ's has no place for. */
  const cairnOverview = (): unknown => ({
    version: options.version ?? null,
    startedAt: new Date(startedAt).toISOString(),
    uptimeSeconds: Math.round((clock() - startedAt) / 1000),
    log: (({ segments: _segments, ...position }) => ({ ...position, bytes: position.bytes ?? null, segments: _segments?.length ?? null }))(logPositionOf(broker.log)),
    connections: options.connections?.() ?? metrics.connectionCount(),
    sessions: sessionCounts(broker),
    collections: broker.state.collections.size,
    messages: metrics.totals(),
    rates: sampler.rates(),
    recovery: broker.recovery ?? null,
  });
  const facts = (): SystemFacts => ({
    broker, version: options.version ?? 'unknown', startedAt, now: clock(), totals: metrics.totals(),
    connections: describeClients({ broker, clients }), listeners, cairn: cairnOverview(),
  });

  const answerBytes = new AnswerBytesPool();
  const gzipped = new GzipMemo();
  const statsIntervalMs = options.statsIntervalMs ?? 0;
  const keptMetrics = new KeptExposition<Buffer>(statsIntervalMs, clock);
  const keptPerObject = new KeptExposition<Buffer>(statsIntervalMs, clock);
  // The socket thread times what it keeps on its own monotonic clock: with a clock given (tests of the interval) it keeps nothing.
  const givenAgainOnSocketThread = (kept: KeptExposition<Buffer>): { keepForMs?: number } => {
    const remainingMs = options.clock === undefined ? kept.remainingMs() : 0;
    return remainingMs > 0 ? { keepForMs: remainingMs } : {};
  };
  const consoleFiles = loadConsoleFiles();
  const consoleFile = (name: string): Answer => {
    const file = consoleFiles.get(name);
    if (file === undefined) throw new HttpError(404, 'not_found', `no console file '${name}'`);
    return { contentType: file.contentType, body: file.body };
  };

  const routes: Route[] = [
    { pattern: /^\/$/, methods: { GET: ({ url }) => (checkParameters(url, []), consoleFile('index.html')) } },
    { pattern: /^\/console\/([a-z-]+\.[a-z]+)$/, methods: { GET: ({ parameters }) => consoleFile(parameters[0] ?? '') } },
    ...managementRoutes({ broker, clients, facts, answerBytes }),
    { pattern: /^\/api\/sessions$/, methods: { GET: ({ url }) => (checkParameters(url, []), json(sessionsView(broker))) } },
    { pattern: /^\/api\/shared-subscriptions$/, methods: { GET: ({ url }) => (checkParameters(url, []), json(sharedSubscriptionsView(broker))) } },
    { pattern: /^\/api\/collections$/, methods: { GET: ({ url }) => (checkParameters(url, []), json(collectionsView(broker))) } },
    {
      pattern: /^\/api\/collections\/([^/]+)\/documents$/, methods: {
        GET: async ({ url, parameters }) => (checkParameters(url, documentsParameters), json(await documentsView(broker, parameters[0] ?? '', url.searchParams, scanLimits))),
      },
    },
    {
      pattern: /^\/api\/collections\/([^/]+)\/count$/, methods: {
        GET: async ({ url, parameters }) => (checkParameters(url, countParameters), json(await countView(broker, parameters[0] ?? '', url.searchParams, scanLimits))),
      },
    },
    { pattern: /^\/api\/log$/, methods: { GET: ({ url }) => (checkParameters(url, []), json(logView(broker))) } },
    { pattern: /^\/api\/log\/records$/, methods: { GET: async ({ url }) => json(await recentRecords(broker, url, limits)) } },
    { pattern: /^\/api\/log\/trace$/, methods: { GET: async ({ url }) => json(await traceOf(broker, url, limits)) } },
    {
      pattern: /^\/metrics$/, methods: {
        GET: async ({ url }) => {
          checkParameters(url, []);
          const body = await keptMetrics.get(async () => Buffer.from(await metrics.text()));
          return { contentType: metrics.contentType, body, ...givenAgainOnSocketThread(keptMetrics) };
        },
      },
    },
    {
      pattern: /^\/metrics\/per-object$/, methods: {
        GET: async ({ url }) => {
          checkParameters(url, []);
          if (statsIntervalMs <= 0) {
            const out = answerBytes.take();
            await metrics.writePerObject(out);
            return pooledAnswer(out, answerBytes, metrics.contentType);
          }
          // Kept for the interval: a copy of its own, the pooled buffer goes back at once.
          const body = await keptPerObject.get(async () => {
            const out = answerBytes.take();
            try {
              await metrics.writePerObject(out);
              return Buffer.from(out.view());
            } finally {
              answerBytes.giveBack(out);
            }
          });
          return { contentType: metrics.contentType, body, ...givenAgainOnSocketThread(keptPerObject) };
        },
      },
    },
  ];

  /** The answer to one request the socket thread forwarded; never rejects (errors are answers, answerError). */
  const serve = async (request: ForwardedRequest): Promise<PostedAnswer> => {
    try {
      return await handle(request);
    } catch (error: unknown) {
      return answerError(error, logger);
    }
  };

  async function handle(request: ForwardedRequest): Promise<PostedAnswer> {
    const user = await authenticate(request.headers, options.users);
    const url = new URL(request.url, 'http://cairn.invalid');
    const { route, parameters } = findRoute(routes, url.pathname);
    const method = request.method === 'HEAD' ? 'GET' : request.method;
    const handler = route.methods[method as Method];
    if (handler === undefined) {
      const allowed = methods.filter((name) => route.methods[name] !== undefined);
      if (allowed.includes('GET')) allowed.push('HEAD' as Method);
      throw new HttpError(405, 'method_not_allowed', `${request.method} is not allowed on ${url.pathname}; allowed: ${allowed.join(', ')}`, { Allow: allowed.join(', ') });
    }
    const body = Buffer.from(request.body.buffer, request.body.byteOffset, request.body.byteLength);
    const context: RequestContext = { url, parameters, headers: request.headers, user, body: async () => parseJsonObject(body) };
    const answer = await encoded(await handler(context), request, gzipped);
    const status = answer.status ?? 200;
    const keepForMs = request.method === 'GET' && status === 200 ? answer.keepForMs : undefined;
    return posted(status, answer.contentType ?? 'text/plain; charset=utf-8', answer.headers ?? {}, request.method === 'HEAD' ? '' : answer.body, answer.sent, keepForMs);
  }

  const settings = {
    host: options.host, port: options.port, connectionsMax: limits.connectionsMax, headerBytesMax: limits.headerBytesMax,
    requestTimeoutMs: limits.requestTimeoutMs, headersTimeoutMs: limits.headersTimeoutMs, idleTimeoutMs: limits.idleTimeoutMs,
    keepAliveTimeoutMs: limits.keepAliveTimeoutMs, timeoutCheckIntervalMs: timeoutCheckIntervalMs(limits), requestBodyBytesMax,
  };
  let thread: SocketThread;
  try {
    thread = await startSocketThread(settings, serve, logger, options.tls);
  } catch (error: unknown) {
    clearInterval(timer);
    throw error;
  }
  const port = thread.port;
  listeners.push({ protocol: options.tls ? 'https' : 'http', ipAddress: options.host, port });
  logger.info({ host: options.host, port, connectionsMax: limits.connectionsMax, ...(options.tls ? { tls: true } : {}) }, options.tls ? 'HTTPS listening' : 'HTTP listening');
  return {
    port,
    close: async () => {
      clearInterval(timer);
      await thread.close();
    },
  };
}

function findRoute(routes: readonly Route[], pathname: string): { route: Route; parameters: string[] } {
  for (const route of routes) {
    const match = route.pattern.exec(pathname);
    if (match) {
      const parameters = match.slice(1).map((part) => {
        try {
          return decodeURIComponent(part);
        } catch {
          throw new HttpError(400, 'bad_request', `path part '${part}' is not valid percent-encoding`);
        }
      });
      return { route, parameters };
    }
  }
  throw new HttpError(404, 'not_found', `no route for ${pathname}: see /api/overview, /api/queues, /api/exchanges, /api/bindings, /api/connections, /api/sessions, /api/shared-subscriptions, /api/collections, /api/log, /metrics`);
}

/** The authenticated user's name; undefined when the API is open. */
async function authenticate(headers: IncomingHttpHeaders, users: Users | undefined): Promise<string | undefined> {
  if (users === undefined || users.size === 0) return undefined;
  const header = headers.authorization;
  const match = header === undefined ? null : /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match) throw new HttpError(401, 'not_authorised', 'credentials required: send HTTP Basic authentication', { 'WWW-Authenticate': authenticationRealm });
  const decoded = Buffer.from(match[1] ?? '', 'base64');
  const colon = decoded.indexOf(0x3a);
  if (colon < 0) throw new HttpError(401, 'not_authorised', 'malformed Basic credentials: expected user:password', { 'WWW-Authenticate': authenticationRealm });
  const username = decoded.subarray(0, colon).toString('utf8');
  const outcome = await users.authenticate('http', username, decoded.subarray(colon + 1));
  if (outcome === 'allowed') return username;
  if (outcome === 'not-authorized') throw new HttpError(403, 'not_authorised', `user '${username}' may not use the HTTP API`);
  if (outcome === 'busy') throw new HttpError(503, 'busy', 'too many logins are being checked at once: retry shortly', { 'Retry-After': '1' });
  throw new HttpError(401, 'not_authorised', 'wrong user name or password', { 'WWW-Authenticate': authenticationRealm });
}

/** The one place that turns an error into an answer. */
function answerError(error: unknown, logger: Logger): PostedAnswer {
  if (error instanceof HttpError) return errorAnswer(error.status, error.error, error.message, error.headers);
  if (error instanceof QueryError) return errorAnswer(400, 'bad_request', error.message);
  if (error instanceof DocumentReadError) {
    logger.error({ err: error }, 'collection query: a document could not be read from the log');
    return errorAnswer(500, 'document_unreadable', error.message);
  }
  logger.error({ err: error }, 'HTTP request failed');
  return errorAnswer(500, 'internal_error', 'the request failed inside the server; see its log');
}

function errorAnswer(status: number, error: string, reason: string, headers: Readonly<Record<string, string>> = {}): PostedAnswer {
  // One line: rabbitmqadmin prints `reason` as it is.
  return posted(status, 'application/json; charset=utf-8', headers, `${JSON.stringify({ error, reason: reason.replace(/\s*\n\s*/g, ' ') })}\n`);
}

/**
 * `answer` gzipped on the thread pool when the client accepts gzip and the body is large enough (answer-encoding.ts),
 * or the same target's last gzipped answer when the bytes are the same (gzip-memo.ts); its pooled buffer goes back once
 * they are read. HEAD gets GET's headers without the work.
 */
async function encoded(answer: Answer, request: ForwardedRequest, gzipped: GzipMemo): Promise<Answer> {
  const headers = { ...answer.headers, Vary: 'Accept-Encoding' };
  const bytes = typeof answer.body === 'string' ? Buffer.from(answer.body) : answer.body;
  if (request.method === 'HEAD' || bytes.length < gzipBytesMin || !acceptsGzip(request.headers['accept-encoding'])) return { ...answer, body: bytes, headers };
  const { sent, ...unsent } = answer;
  try {
    return { ...unsent, body: await gzipped.gzip(request.url, bytes), headers: { ...headers, 'Content-Encoding': 'gzip' } };
  } finally {
    sent?.(true);
  }
}

/**
 * The answer as the socket thread writes it. The body is copied into an ArrayBuffer of its own, to transfer: a pooled
 * buffer (answer-bytes.ts) goes back at once, and a kept gzip answer (gzip-memo.ts) stays whole.
 */
function posted(status: number, contentType: string, headers: Readonly<Record<string, string>>, body: string | Buffer, sent?: (reusable: boolean) => void, keepForMs?: number): PostedAnswer {
  // Checked here, where a bad header is a 500 (answerError), not a fault in the socket thread's writeHead.
  for (const [name, value] of Object.entries(headers)) {
    validateHeaderName(name);
    validateHeaderValue(name, value);
  }
  // A string is encoded straight into a fresh buffer (Buffer.from may hand out a slice of node's shared pool).
  const bytes = typeof body === 'string' ? textEncoder.encode(body) : new Uint8Array(body);
  sent?.(true);
  return { status, headers: { ...headers, 'Content-Type': contentType, 'Content-Length': bytes.byteLength, 'Cache-Control': 'no-store' }, body: bytes, ...(keepForMs === undefined ? {} : { keepForMs }) };
}

const textEncoder = new TextEncoder();

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
