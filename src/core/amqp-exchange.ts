/**
 * AMQP exchanges at run time and how each type routes a routing key to queue
 * names. One copy per queue even when several bindings match (a Set).
 *
 * The default exchange ('') routes to the queue named by the key and takes no
 * bindings; amq.direct, amq.fanout and amq.topic exist from the start and are
 * durable, like RabbitMQ's, so durable queues may bind to them durably.
 */
import type { ExchangeKind } from './api.js';
import { TopicBindingIndex } from './binding-index.js';

export const defaultExchange = '';
export const builtInExchanges: ReadonlyArray<readonly [string, ExchangeKind]> = [
  ['amq.direct', 'direct'],
  ['amq.fanout', 'fanout'],
  ['amq.topic', 'topic'],
];
export const supportedExchangeTypes: readonly ExchangeKind[] = ['direct', 'fanout', 'topic'];

export class ExchangeRuntime {
  /** routing key → queues (direct), '' → queues (fanout). */
  private readonly byKey = new Map<string, Set<string>>();
  private readonly topicIndex: TopicBindingIndex<string> | undefined;
  /** queue → keys it is bound with, to unbind everything of a deleted queue. */
  private readonly keysOfQueue = new Map<string, Set<string>>();
  bindingCount = 0;

  constructor(
    readonly name: string,
    readonly type: ExchangeKind,
    readonly durable: boolean,
    readonly autoDelete: boolean,
    readonly builtIn: boolean,
  ) {
    this.topicIndex = type === 'topic' ? new TopicBindingIndex<string>() : undefined;
  }

  /** Returns false if the binding already existed. */
  bind(queue: string, routingKey: string): boolean {
    let keys = this.keysOfQueue.get(queue);
    if (keys?.has(routingKey)) return false;
    if (!keys) this.keysOfQueue.set(queue, (keys = new Set()));
    keys.add(routingKey);
    this.bindingCount++;
    if (this.topicIndex) this.topicIndex.add(routingKey, queue);
    else {
      const key = this.type === 'fanout' ? '' : routingKey;
      let queues = this.byKey.get(key);
      if (!queues) this.byKey.set(key, (queues = new Set()));
      queues.add(queue);
    }
    return true;
  }

  /** Returns false if there was no such binding. */
  unbind(queue: string, routingKey: string): boolean {
    const keys = this.keysOfQueue.get(queue);
    if (!keys?.delete(routingKey)) return false;
    if (keys.size === 0) this.keysOfQueue.delete(queue);
    this.bindingCount--;
    if (this.topicIndex) this.topicIndex.remove(routingKey, queue);
    else if (this.type === 'direct') this.removeFromKey(routingKey, queue);
    else if (!this.keysOfQueue.has(queue)) this.removeFromKey('', queue); // fanout: the queue goes when its last binding does
    return true;
  }

  unbindQueue(queue: string): void {
    for (const key of [...(this.keysOfQueue.get(queue) ?? [])]) this.unbind(queue, key);
  }

  route(routingKey: string): Iterable<string> {
    if (this.topicIndex) return this.topicIndex.match(routingKey);
    return this.byKey.get(this.type === 'fanout' ? '' : routingKey) ?? [];
  }

  bindings(): Array<{ queue: string; routingKey: string }> {
    const out: Array<{ queue: string; routingKey: string }> = [];
    for (const [queue, keys] of this.keysOfQueue) for (const routingKey of keys) out.push({ queue, routingKey });
    return out;
  }

  private removeFromKey(key: string, queue: string): void {
    const queues = this.byKey.get(key);
    queues?.delete(queue);
    if (queues?.size === 0) this.byKey.delete(key);
  }
}
