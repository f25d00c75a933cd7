/**
 * The management API's whole-broker resources in RabbitMQ's shapes:
 * /api/overview, /api/nodes, /api/vhosts, /api/whoami. Cairn is one node with
 * one virtual host; the overview's Cairn-only figures (log position, MQTT
 * sessions, collections, rates, recovery) ride under its `cairn` field.
 */
import { availableParallelism } from 'node:os';
import type { Broker } from '../../core/broker.js';
import { queueTotals } from '../../core/queue-totals.js';
import type { MetricsTotals } from '../../metrics.js';
import type { ConnectionDescription } from '../../protocols/connection-description.js';
import type { Item } from './listing.js';
import { nodeName, onlyVhost, type ListenerAddress } from './resources.js';

export interface SystemFacts {
  readonly broker: Broker;
  readonly version: string;
  readonly startedAt: number;
  readonly now: number;
  readonly totals: MetricsTotals;
  readonly connections: readonly ConnectionDescription[];
  readonly listeners: readonly ListenerAddress[];
  /** Cairn's own overview, under `cairn`. */
  readonly cairn: unknown;
}

const exchangeTypes = [
  { name: 'direct', description: 'AMQP direct exchange, as per the AMQP specification', enabled: true },
  { name: 'fanout', description: 'AMQP fanout exchange, as per the AMQP specification', enabled: true },
  { name: 'topic', description: 'AMQP topic exchange, as per the AMQP specification', enabled: true },
];

function sum(record: Readonly<Record<string, number>>): number {
  return Object.values(record).reduce((total, value) => total + value, 0);
}

export function overviewJson(facts: SystemFacts): Item {
  const { broker, connections } = facts;
  const totals = queueTotals(broker);
  return {
    management_version: facts.version, product_name: 'Cairn', product_version: facts.version, rabbitmq_version: facts.version,
    rates_mode: 'none', cluster_name: nodeName, node: nodeName, exchange_types: exchangeTypes,
    message_stats: { publish: sum(facts.totals.messagesIn), deliver_get: sum(facts.totals.messagesOut) },
    queue_totals: { messages: totals.messages, messages_ready: totals.ready, messages_unacknowledged: totals.unacknowledged },
    object_totals: {
      connections: connections.length, channels: connections.reduce((count, connection) => count + connection.channels.length, 0),
      exchanges: broker.exchanges.size, queues: broker.queues.size, consumers: totals.consumers,
    },
    listeners: facts.listeners.map((listener) => ({ node: nodeName, protocol: listener.protocol, ip_address: listener.ipAddress, port: listener.port })),
    cairn: facts.cairn,
  };
}

export function nodeJson(facts: SystemFacts): Item {
  const memory = process.memoryUsage();
  return {
    name: nodeName, type: 'disc', running: true, uptime: facts.now - facts.startedAt, os_pid: String(process.pid),
    processors: availableParallelism(), mem_used: memory.rss, sockets_used: facts.connections.length, partitions: [],
    exchange_types: exchangeTypes, cairn: { heap_used_bytes: memory.heapUsed, node_version: process.version },
  };
}

export function vhostJson(facts: SystemFacts): Item {
  const totals = queueTotals(facts.broker);
  let received = 0;
  let sent = 0;
  for (const connection of facts.connections) {
    received += connection.receivedBytes;
    sent += connection.sentBytes;
  }
  return {
    name: onlyVhost, description: 'Default virtual host', tags: [], tracing: false, cluster_state: { [nodeName]: 'running' },
    messages: totals.messages, messages_ready: totals.ready, messages_unacknowledged: totals.unacknowledged, recv_oct: received, send_oct: sent,
  };
}
