/**
 * AMQP exchanges at run time and how each type routes a message to its bound
 * destinations: queues, or other exchanges (exchange-to-exchange bindings,
 * RabbitMQ's extension). Following bindings from exchange to exchange, loops
 * and the alternate exchange are the core's (exchange-routing.ts); this file
 * answers one exchange's part.
 *
 * A binding is (destination, routing key, arguments), as RabbitMQ identifies
 * it: two bindings that differ only in their arguments are two bindings. A
 * destination is written `q:name` or `x:name` (destinationOf).
 *
 * The default exchange ('') routes to the queue named by the key and takes no
 * bindings; amq.direct, amq.fanout, amq.topic, amq.headers and amq.match exist
 * from the start and are durable, like RabbitMQ's, so durable queues may bind
 * to them durably.
 */
import { encodeFieldTable, type FieldTable } from '../protocols/amqp/codec/index.js';
import type { ExchangeKind } from './api.js';
import { TopicBindingIndex } from './binding-index.js';
import { headersMatch, xMatchOf, type XMatchMode } from './headers-match.js';

export const defaultExchange = '';
export const builtInExchanges: ReadonlyArray<readonly [string, ExchangeKind]> = [
  ['amq.direct', 'direct'],
  ['amq.fanout', 'fanout'],
  ['amq.topic', 'topic'],
  ['amq.headers', 'headers'],
  ['amq.match', 'headers'],
];
export const supportedExchangeTypes: readonly ExchangeKind[] = ['direct', 'fanout', 'topic', 'headers'];

/** `q:` + a queue name or `x:` + an exchange name. */
export type Destination = string;

export function queueDestination(queue: string): Destination {
  return `q:${queue}`;
}

export function exchangeDestination(exchange: string): Destination {
  return `x:${exchange}`;
}

export function destinationOf(destination: Destination): { readonly kind: 'queue' | 'exchange'; readonly name: string } {
  return { kind: destination.startsWith('x:') ? 'exchange' : 'queue', name: destination.slice(2) };
}

/** Binding arguments with their canonical bytes (sorted names, AMQP field-table encoding): what makes two bindings the same. */
export interface BindingArguments {
  readonly table: FieldTable;
  readonly bytes: Uint8Array;
}

export function bindingArgumentsOf(table: FieldTable): BindingArguments | undefined {
  const names = Object.keys(table).sort();
  if (names.length === 0) return undefined;
  const sorted: Record<string, FieldTable[string]> = {};
  for (const name of names) sorted[name] = table[name]!;
  // A plain Uint8Array, as a replayed record's body decodes it (live state must equal replayed state).
  return { table: sorted, bytes: new Uint8Array(encodeFieldTable(sorted)) };
}

export interface ExchangeBinding {
  readonly destination: Destination;
  readonly routingKey: string;
  readonly arguments: BindingArguments | undefined;
}

interface HeadersBinding {
  readonly destination: Destination;
  readonly table: FieldTable;
  readonly mode: XMatchMode;
}

export interface ExchangeOptions {
  readonly durable: boolean;
  readonly autoDelete: boolean;
  readonly builtIn: boolean;
  /** Clients may not publish to it; only other exchanges route to it. */
  readonly internal?: boolean;
  /** Where a message goes that this exchange routes nowhere (RabbitMQ's alternate-exchange argument). */
  readonly alternateExchange?: string | undefined;
}

export class ExchangeRuntime {
  readonly durable: boolean;
  readonly autoDelete: boolean;
  readonly builtIn: boolean;
  readonly internal: boolean;
  readonly alternateExchange: string | undefined;
  /** Binding id (destination, key, argument bytes) → binding. */
  private readonly all = new Map<string, ExchangeBinding>();
  /** Destination → its binding ids, to unbind everything of a deleted queue or exchange. */
  private readonly idsOfDestination = new Map<Destination, Set<string>>();
  /** routing key → destination → bindings with it (direct), '' → … (fanout). */
  private readonly byKey = new Map<string, Map<Destination, number>>();
  private readonly topicIndex: TopicBindingIndex<Destination> | undefined;
  /** topic: (pattern, destination) → bindings with it (bindings differing only in arguments share one index entry). */
  private readonly topicCounts = new Map<string, number>();
  private readonly headers = new Map<string, HeadersBinding>();

  constructor(
    readonly name: string,
    readonly type: ExchangeKind,
    options: ExchangeOptions,
  ) {
    this.durable = options.durable;
    this.autoDelete = options.autoDelete;
    this.builtIn = options.builtIn;
    this.internal = options.internal ?? false;
    this.alternateExchange = options.alternateExchange;
    this.topicIndex = type === 'topic' ? new TopicBindingIndex<Destination>() : undefined;
  }

  get bindingCount(): number {
    return this.all.size;
  }

  /** Returns false if the binding already existed. A headers binding's x-match is checked first (406). */
  bind(destination: Destination, routingKey: string, args?: BindingArguments): boolean {
    const id = bindingId(destination, routingKey, args);
    if (this.all.has(id)) return false;
    const mode = this.type === 'headers' ? xMatchOf(args?.table ?? {}) : 'all';
    this.all.set(id, { destination, routingKey, arguments: args });
    let ids = this.idsOfDestination.get(destination);
    if (!ids) this.idsOfDestination.set(destination, (ids = new Set()));
    ids.add(id);
    if (this.type === 'headers') this.headers.set(id, { destination, table: args?.table ?? {}, mode });
    else if (this.topicIndex) {
      const pair = `${routingKey}\u0000${destination}`;
      const count = this.topicCounts.get(pair) ?? 0;
      this.topicCounts.set(pair, count + 1);
      if (count === 0) this.topicIndex.add(routingKey, destination);
    } else {
      const key = this.type === 'fanout' ? '' : routingKey;
      let destinations = this.byKey.get(key);
      if (!destinations) this.byKey.set(key, (destinations = new Map()));
      destinations.set(destination, (destinations.get(destination) ?? 0) + 1);
    }
    return true;
  }

  /** Returns false if there was no such binding. */
  unbind(destination: Destination, routingKey: string, args?: BindingArguments): boolean {
    const id = bindingId(destination, routingKey, args);
    if (!this.all.delete(id)) return false;
    const ids = this.idsOfDestination.get(destination)!;
    ids.delete(id);
    if (ids.size === 0) this.idsOfDestination.delete(destination);
    if (this.type === 'headers') this.headers.delete(id);
    else if (this.topicIndex) {
      const pair = `${routingKey}\u0000${destination}`;
      const count = this.topicCounts.get(pair)! - 1;
      if (count > 0) this.topicCounts.set(pair, count);
      else {
        this.topicCounts.delete(pair);
        this.topicIndex.remove(routingKey, destination);
      }
    } else {
      const key = this.type === 'fanout' ? '' : routingKey;
      const destinations = this.byKey.get(key)!;
      const count = destinations.get(destination)! - 1;
      if (count > 0) destinations.set(destination, count);
      else destinations.delete(destination);
      if (destinations.size === 0) this.byKey.delete(key);
    }
    return true;
  }

  /** A queue or exchange was deleted: every binding to it goes. */
  unbindDestination(destination: Destination): void {
    for (const id of [...(this.idsOfDestination.get(destination) ?? [])]) {
      const binding = this.all.get(id)!;
      this.unbind(destination, binding.routingKey, binding.arguments);
    }
  }

  /** This exchange's own destinations for a message (no exchange-to-exchange hops): each once. */
  route(routingKey: string, headers: () => FieldTable | undefined): Iterable<Destination> {
    if (this.type === 'headers') {
      const matched = new Set<Destination>();
      const table = this.headers.size > 0 ? headers() : undefined;
      for (const binding of this.headers.values()) {
        if (!matched.has(binding.destination) && headersMatch(binding.table, table, binding.mode)) matched.add(binding.destination);
      }
      return matched;
    }
    if (this.topicIndex) return this.topicIndex.match(routingKey);
    return this.byKey.get(this.type === 'fanout' ? '' : routingKey)?.keys() ?? [];
  }

  bindings(): ExchangeBinding[] {
    return [...this.all.values()];
  }
}

function bindingId(destination: Destination, routingKey: string, args: BindingArguments | undefined): string {
  return `${destination}\u0000${routingKey}\u0000${args === undefined ? '' : Buffer.from(args.bytes).toString('base64')}`;
}
