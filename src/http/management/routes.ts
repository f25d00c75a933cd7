/**
 * The RabbitMQ-compatible half of the HTTP API: the routes of RabbitMQ's
 * management plugin that Cairn implements, with its paths, methods, status
 * codes (201 created, 204 done or updated) and bodies. `{vhost}` is always
 * '/', written %2F; the default exchange is `amq.default` in a path.
 */
import type { Broker } from '../../core/broker.js';
import type { ManagedConnection } from '../../protocols/connection-description.js';
import { notFound } from '../http-error.js';
import type { AnswerBytesPool } from '../answer-bytes.js';
import { renderInSlices } from '../answer-slices.js';
import { json, jsonContentType, noContent, path, pooledAnswer, segment, type Answer, type RequestContext, type Route } from '../route.js';
import * as commands from './commands.js';
import { checkParameters, listAnswer, listItemsMax, objectAnswer, wholeListColumns, type Item } from './listing.js';
import {
  bindingsJson, channelsJson, checkVhost, connectionJson, consumersJson, describeClients, exchangeJson, exchangeNameOf, exchangesJson,
  nodeName, queueJson, queueListWriter, requireExchange, requireQueue, sortedQueues, type ManagementSource,
} from './resources.js';
import { nodeJson, overviewJson, vhostJson, type SystemFacts } from './system.js';

export interface ManagementRoutesOptions extends ManagementSource {
  readonly broker: Broker;
  clients(): Iterable<ManagedConnection>;
  /** Built per request: the figures that change (totals, connections, the Cairn overview). */
  facts(): SystemFacts;
  /** Where large answers are written. */
  readonly answerBytes: AnswerBytesPool;
}

const api = '\\/api';
const closedViaApi = 'Closed via management plugin';

function list(items: readonly Item[], context: RequestContext): Answer {
  const { body, headers } = listAnswer(items, context.url);
  return json(body, 200, headers);
}

/**
 * GET /api/queues: a whole list (all of it, or some columns) is written as bytes in slices with turns of the event
 * loop between them (answer-slices.ts), anything else goes through listAnswer.
 */
async function queueList(broker: Broker, pool: AnswerBytesPool, context: RequestContext): Promise<Answer> {
  const queues = sortedQueues(broker);
  const whole = wholeListColumns(context.url);
  if (whole === undefined || queues.length > listItemsMax) return list(queues.map(queueJson), context);
  const out = pool.take();
  await renderInSlices(queueListWriter.writeSlices(queues, queueListWriter.columnIndexes(whole.columns), out));
  out.ascii('\n');
  return pooledAnswer(out, pool, jsonContentType);
}

function one(item: Item, context: RequestContext): Answer {
  return json(objectAnswer(item, context.url));
}

/** Path parameters of routes that start with a vhost: the vhost is checked, the rest returned. */
function inVhost(context: RequestContext): string[] {
  const [vhost = '', ...rest] = context.parameters;
  checkVhost(vhost);
  return rest;
}

function created(outcome: commands.Outcome): Answer {
  return noContent(outcome === 'created' ? 201 : 204);
}

export function managementRoutes(options: ManagementRoutesOptions): Route[] {
  const { broker } = options;
  const connectionsNow = (): ReturnType<typeof describeClients> => describeClients(options);
  const findConnection = (name: string): ManagedConnection => {
    for (const client of options.clients()) if (client.describe().name === name) return client;
    throw notFound(`no connection named '${name}'`);
  };
  return [
    { pattern: path(api, 'overview'), methods: { GET: (c) => one(overviewJson(options.facts()), c) } },
    { pattern: path(api, 'whoami'), methods: { GET: (c) => one({ name: c.user ?? 'anonymous', tags: ['administrator'] }, c) } },
    { pattern: path(api, 'vhosts'), methods: { GET: (c) => list([vhostJson(options.facts())], c) } },
    { pattern: path(api, 'vhosts', segment), methods: { GET: (c) => (inVhost(c), one(vhostJson(options.facts()), c)) } },
    { pattern: path(api, 'nodes'), methods: { GET: (c) => list([nodeJson(options.facts())], c) } },
    {
      pattern: path(api, 'nodes', segment), methods: {
        GET: (c) => {
          if (c.parameters[0] !== nodeName) throw notFound(`no node '${c.parameters[0] ?? ''}': this is '${nodeName}'`);
          checkParameters(c.url, ['columns', 'memory', 'binary']);
          return json(nodeJson(options.facts()));
        },
      },
    },
    // Connections and channels.
    { pattern: path(api, 'connections'), methods: { GET: (c) => list(connectionsNow().map(connectionJson), c) } },
    {
      pattern: path(api, 'connections', segment), methods: {
        GET: (c) => one(connectionJson(findConnection(c.parameters[0] ?? '').describe()), c),
        DELETE: (c) => {
          checkParameters(c.url, []);
          const reason = c.headers['x-reason'];
          findConnection(c.parameters[0] ?? '').closeByOperator(typeof reason === 'string' && reason !== '' ? reason : closedViaApi);
          return noContent();
        },
      },
    },
    { pattern: path(api, 'connections', segment, 'channels'), methods: { GET: (c) => list(channelsJson([findConnection(c.parameters[0] ?? '').describe()]), c) } },
    { pattern: path(api, 'channels'), methods: { GET: (c) => list(channelsJson(connectionsNow()), c) } },
    {
      pattern: path(api, 'channels', segment), methods: {
        GET: (c) => {
          const channel = channelsJson(connectionsNow()).find((item) => item['name'] === c.parameters[0]);
          if (!channel) throw notFound(`no channel named '${c.parameters[0] ?? ''}'`);
          return one(channel, c);
        },
      },
    },
    { pattern: path(api, 'consumers'), methods: { GET: (c) => list(consumersJson(broker, connectionsNow()), c) } },
    { pattern: path(api, 'consumers', segment), methods: { GET: (c) => (inVhost(c), list(consumersJson(broker, connectionsNow()), c)) } },
    // Exchanges.
    { pattern: path(api, 'exchanges'), methods: { GET: (c) => list(exchangesJson(broker), c) } },
    { pattern: path(api, 'exchanges', segment), methods: { GET: (c) => (inVhost(c), list(exchangesJson(broker), c)) } },
    {
      pattern: path(api, 'exchanges', segment, segment), methods: {
        GET: (c) => one(exchangeJson(requireExchange(broker, exchangeNameOf(inVhost(c)[0] ?? ''))), c),
        PUT: async (c) => created(await commands.declareExchange(broker, exchangeNameOf(inVhost(c)[0] ?? ''), await c.body())),
        DELETE: async (c) => (await commands.deleteExchange(broker, exchangeNameOf(inVhost(c)[0] ?? ''), c.url), noContent()),
      },
    },
    {
      pattern: path(api, 'exchanges', segment, segment, 'bindings', 'source'), methods: {
        GET: (c) => {
          const name = exchangeNameOf(inVhost(c)[0] ?? '');
          requireExchange(broker, name);
          return list(bindingsJson(broker, { source: name }), c);
        },
      },
    },
    {
      // Cairn has no exchange-to-exchange bindings: an exchange is never a destination.
      pattern: path(api, 'exchanges', segment, segment, 'bindings', 'destination'), methods: {
        GET: (c) => (requireExchange(broker, exchangeNameOf(inVhost(c)[0] ?? '')), list([], c)),
      },
    },
    {
      pattern: path(api, 'exchanges', segment, segment, 'publish'), methods: {
        POST: async (c) => json(await commands.publish(broker, exchangeNameOf(inVhost(c)[0] ?? ''), await c.body())),
      },
    },
    // Queues.
    { pattern: path(api, 'queues'), methods: { GET: (c) => queueList(broker, options.answerBytes, c) } },
    { pattern: path(api, 'queues', segment), methods: { GET: (c) => (inVhost(c), queueList(broker, options.answerBytes, c)) } },
    {
      pattern: path(api, 'queues', segment, segment), methods: {
        GET: (c) => one(queueJson(requireQueue(broker, inVhost(c)[0] ?? '')), c),
        PUT: async (c) => created(await commands.declareQueue(broker, inVhost(c)[0] ?? '', await c.body())),
        DELETE: async (c) => (await commands.deleteQueue(broker, inVhost(c)[0] ?? '', c.url), noContent()),
      },
    },
    {
      pattern: path(api, 'queues', segment, segment, 'bindings'), methods: {
        GET: (c) => {
          const name = inVhost(c)[0] ?? '';
          requireQueue(broker, name);
          return list(bindingsJson(broker, { destination: name }), c);
        },
      },
    },
    { pattern: path(api, 'queues', segment, segment, 'contents'), methods: { DELETE: async (c) => (await commands.purgeQueue(broker, inVhost(c)[0] ?? '', c.url), noContent()) } },
    { pattern: path(api, 'queues', segment, segment, 'get'), methods: { POST: async (c) => json(await commands.get(broker, inVhost(c)[0] ?? '', await c.body())) } },
    // Bindings.
    { pattern: path(api, 'bindings'), methods: { GET: (c) => list(bindingsJson(broker), c) } },
    { pattern: path(api, 'bindings', segment), methods: { GET: (c) => (inVhost(c), list(bindingsJson(broker), c)) } },
    {
      pattern: path(api, 'bindings', segment, 'e', segment, 'q', segment), methods: {
        GET: (c) => {
          const [exchange = '', queue = ''] = inVhost(c);
          requireExchange(broker, exchangeNameOf(exchange));
          requireQueue(broker, queue);
          return list(bindingsJson(broker, { source: exchangeNameOf(exchange), destination: queue }), c);
        },
        POST: async (c) => {
          const [exchange = '', queue = ''] = inVhost(c);
          const location = await commands.bind(broker, exchangeNameOf(exchange), queue, await c.body());
          return noContent(201, { Location: location });
        },
      },
    },
    {
      pattern: path(api, 'bindings', segment, 'e', segment, 'q', segment, segment), methods: {
        GET: (c) => {
          const [exchange = '', queue = '', key = ''] = inVhost(c);
          return one(commands.findBinding(broker, exchangeNameOf(exchange), queue, key), c);
        },
        DELETE: async (c) => {
          const [exchange = '', queue = '', key = ''] = inVhost(c);
          await commands.unbind(broker, exchangeNameOf(exchange), queue, key);
          return noContent();
        },
      },
    },
    {
      pattern: path(api, 'bindings', segment, 'e', segment, 'e', '.+'), methods: {
        GET: () => { throw notFound('exchange-to-exchange bindings are not supported by Cairn'); },
        POST: () => { throw notFound('exchange-to-exchange bindings are not supported by Cairn'); },
      },
    },
  ];
}
