/**
 * The management API's resources in RabbitMQ's JSON shapes (field names as in
 * RabbitMQ 3.x's HTTP API: snake_case, `messages_ready`,
 * `messages_unacknowledged`, `auto_delete`, `vhost`, `node`, ...), built on
 * demand from the broker's runtime and the live connections. Read-only and
 * synchronous: every answer is a view of one moment.
 *
 * What only Cairn has rides along under a `cairn` field, so RabbitMQ's tools
 * see their shapes and Cairn's console still sees its extras.
 *
 * Cairn has one virtual host, '/', and one node.
 */
import { hostname } from 'node:os';
import { destinationOf, type ExchangeRuntime } from '../../core/amqp-exchange.js';
import type { FieldTable } from '../../protocols/amqp/codec/index.js';
import { plainTableOf } from '../../protocols/amqp/field-table-json.js';
import type { QueueRuntime } from '../../core/amqp-queue.js';
import type { Broker } from '../../core/broker.js';
import type { ChannelDescription, ConnectionDescription, ManagedConnection } from '../../protocols/connection-description.js';
import { notFound } from '../http-error.js';
import type { Item } from './listing.js';
import { QueueListWriter, queueFields, queueObject, type QueueView } from './queue-fields.js';
import { sortedByName } from './sorted-queues.js';

export const onlyVhost = '/';
export const nodeName = `cairn@${hostname()}`;
/** RabbitMQ's URL name of the default exchange (its real name is ''). */
export const defaultExchangeAlias = 'amq.default';

export interface ListenerAddress {
  /** RabbitMQ's listener names: 'amqp/ssl' and 'mqtt/ssl' are TLS, 'http/web-mqtt' MQTT over WebSocket. */
  readonly protocol: 'amqp' | 'mqtt' | 'http' | 'amqp/ssl' | 'mqtt/ssl' | 'https' | 'http/web-mqtt' | 'https/web-mqtt';
  readonly ipAddress: string;
  readonly port: number;
}

/** What the resources are built from. */
export interface ManagementSource {
  readonly broker: Broker;
  /** The live client connections of both front ends. */
  clients(): Iterable<ManagedConnection>;
}

export function checkVhost(vhost: string): void {
  if (vhost !== onlyVhost) throw notFound(`vhost '${vhost}' not found: Cairn has one virtual host, '/' (%2F in a path)`);
}

export function exchangeNameOf(pathName: string): string {
  return pathName === defaultExchangeAlias ? '' : pathName;
}

function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ───────────────────────────── queues, exchanges, bindings ─────────────────────────────

const queueFieldTable = queueFields(nodeName);
/** Writes the queue lists a monitoring load asks for as JSON text (queue-fields.ts). */
export const queueListWriter = new QueueListWriter(queueFieldTable);

export function queueJson(queue: QueueView): Item {
  return queueObject(queueFieldTable, queue);
}

/** Every queue, by name (as RabbitMQ lists them; sorted-queues.ts). */
export function sortedQueues(broker: Broker): readonly QueueRuntime[] {
  return sortedByName(broker.queues);
}

export function queuesJson(broker: Broker): Item[] {
  return sortedQueues(broker).map(queueJson);
}

export function requireQueue(broker: Broker, name: string): QueueRuntime {
  const queue = broker.queues.get(name);
  if (!queue) throw notFound(`no queue '${name}' in vhost '/'`);
  return queue;
}

export function exchangeJson(exchange: ExchangeRuntime): Item {
  return {
    name: exchange.name, vhost: onlyVhost, type: exchange.type, durable: exchange.durable, auto_delete: exchange.autoDelete,
    internal: exchange.internal, arguments: exchange.alternateExchange === undefined ? {} : { 'alternate-exchange': exchange.alternateExchange },
    cairn: { built_in: exchange.builtIn, bindings: exchange.bindingCount },
  };
}

export function exchangesJson(broker: Broker): Item[] {
  return [...broker.exchanges.values()].sort((a, b) => byName(a.name, b.name)).map(exchangeJson);
}

export function requireExchange(broker: Broker, name: string): ExchangeRuntime {
  const exchange = broker.exchanges.get(name);
  if (!exchange) throw notFound(`no exchange '${name}' in vhost '/'`);
  return exchange;
}

/** RabbitMQ's name for a binding without arguments: '~' for the empty key, else the key percent-encoded. */
export function propertiesKeyOf(routingKey: string): string {
  return routingKey === '' ? '~' : encodeURIComponent(routingKey);
}

export function routingKeyOf(propertiesKey: string): string {
  if (propertiesKey === '~') return '';
  try {
    // Written by RabbitMQ's quote_plus or by encodeURIComponent: '+' is a space in the first, never appears raw in the second.
    return decodeURIComponent(propertiesKey.replace(/\+/g, ' '));
  } catch {
    throw notFound(`binding properties key '${propertiesKey}' is not valid percent-encoding`);
  }
}

export function bindingJson(source: string, destination: string, routingKey: string, destinationType: 'queue' | 'exchange' = 'queue', args: FieldTable = {}): Item {
  return {
    source, vhost: onlyVhost, destination, destination_type: destinationType, routing_key: routingKey, arguments: plainTableOf(args),
    properties_key: propertiesKeyOf(routingKey),
  };
}

/** Every binding, the default exchange's implicit ones first (as RabbitMQ lists them). */
export function bindingsJson(broker: Broker, filter: { source?: string; destination?: string } = {}): Item[] {
  const bindings: Item[] = [];
  if (filter.source === undefined || filter.source === '') {
    for (const queue of queuesJson(broker)) {
      const name = String(queue['name']);
      if (filter.destination === undefined || filter.destination === name) bindings.push(bindingJson('', name, name));
    }
  }
  const exchanges = [...broker.exchanges.values()].filter((exchange) => exchange.name !== '' && (filter.source === undefined || filter.source === exchange.name));
  for (const exchange of exchanges.sort((a, b) => byName(a.name, b.name))) {
    const own = exchange.bindings().map((binding) => ({ ...binding, ...destinationOf(binding.destination) }))
      .filter(({ name }) => filter.destination === undefined || filter.destination === name);
    own.sort((a, b) => byName(a.kind, b.kind) || byName(a.name, b.name) || byName(a.routingKey, b.routingKey));
    for (const { name, kind, routingKey, arguments: args } of own) bindings.push(bindingJson(exchange.name, name, routingKey, kind, args?.table));
  }
  return bindings;
}

// ───────────────────────────── connections, channels, consumers ─────────────────────────────

const protocolNames = { amqp: 'AMQP 0-9-1', mqtt: 'MQTT 3.1.1' } as const;

export function describeClients(source: ManagementSource): ConnectionDescription[] {
  const described: ConnectionDescription[] = [];
  for (const client of source.clients()) described.push(client.describe());
  return described.sort((a, b) => byName(a.name, b.name));
}

export function connectionJson(connection: ConnectionDescription): Item {
  const clientProperties = connection.protocol === 'mqtt'
    ? (connection.clientId === undefined ? {} : { client_id: connection.clientId })
    : connection.clientProperties ?? {};
  return {
    name: connection.name, node: nodeName, vhost: onlyVhost, user: connection.user ?? 'anonymous', protocol: protocolNames[connection.protocol],
    type: 'network', state: connection.state, host: connection.host, port: connection.port, peer_host: connection.peerHost, peer_port: connection.peerPort,
    ssl: false, connected_at: connection.connectedAt, client_properties: clientProperties, channels: connection.channels.length,
    channel_max: connection.channelMax ?? 0, frame_max: connection.frameMax ?? 0, timeout: connection.heartbeatSeconds ?? 0,
    recv_oct: connection.receivedBytes, send_oct: connection.sentBytes,
  };
}

function channelName(connection: ConnectionDescription, channel: ChannelDescription): string {
  return `${connection.name} (${channel.number})`;
}

export function channelJson(connection: ConnectionDescription, channel: ChannelDescription): Item {
  return {
    name: channelName(connection, channel), node: nodeName, vhost: onlyVhost, user: connection.user ?? 'anonymous', number: channel.number,
    connection_details: { name: connection.name, peer_host: connection.peerHost, peer_port: connection.peerPort },
    state: channel.state === 'open' ? 'running' : 'closing', consumer_count: channel.consumers.length,
    messages_unacknowledged: channel.unacknowledged, messages_unconfirmed: channel.unconfirmed, messages_uncommitted: 0, acks_uncommitted: 0,
    prefetch_count: channel.prefetch, global_prefetch_count: channel.globalPrefetch, confirm: channel.confirm, transactional: false,
  };
}

export function channelsJson(connections: readonly ConnectionDescription[]): Item[] {
  return connections.flatMap((connection) => connection.channels.map((channel) => channelJson(connection, channel)));
}

export function consumersJson(broker: Broker, connections: readonly ConnectionDescription[]): Item[] {
  const consumers: Item[] = [];
  for (const connection of connections) {
    for (const channel of connection.channels) {
      for (const consumer of channel.consumers) {
        const queue = broker.queues.get(consumer.queue);
        consumers.push({
          consumer_tag: consumer.tag, queue: { name: consumer.queue, vhost: onlyVhost }, ack_required: consumer.ackRequired,
          prefetch_count: consumer.prefetch, exclusive: queue?.exclusiveConsumer?.tag === consumer.tag, active: consumer.active,
          activity_status: consumer.active ? 'up' : 'waiting', arguments: {},
          channel_details: {
            name: channelName(connection, channel), number: channel.number, connection_name: connection.name, node: nodeName,
            peer_host: connection.peerHost, peer_port: connection.peerPort, user: connection.user ?? 'anonymous',
          },
        });
      }
    }
  }
  return consumers;
}
