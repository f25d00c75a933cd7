/**
 * A deleted queue's messages are let go when it is deleted, even though the HTTP API keeps its last
 * answers' queue lists (the sorted list, a list's text per set of columns, the per-object metrics'
 * queues) until the next list of their kind, which may never come for a set of columns asked once.
 * A transient queue's messages are their bodies: without the release, deleting a queue of 100 MB
 * right after a monitoring scrape kept the 100 MB. Real HTTP (global fetch) against a real Broker on
 * a MemoryLog; a full collection (gc, exposed at run time) between the delete and the check.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { MemoryLog } from '../../src/core/record-log.js';
import { startHttpServer, type HttpServerHandle } from '../../src/http/server.js';
import { silentLogger } from '../../src/logger.js';
import { Metrics } from '../../src/metrics.js';
import { encodeProperties } from '../../src/protocols/amqp/codec/index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const owner = 'connection-1';
const messagesPerQueue = 8;
const bodyBytes = 64 * 1024;

describe('a deleted queue\'s messages, after the HTTP API listed it', () => {
  let broker: Broker;
  let server: HttpServerHandle;
  let base: string;

  beforeAll(async () => {
    broker = Broker.open({ log: new MemoryLog() });
    server = await startHttpServer({ broker, host: '127.0.0.1', port: 0, logger: silentLogger(), metrics: new Metrics(), version: '0.1.0-test' });
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server.close();
  });

  /** Declares `name` and fills it with transient messages; weak references to their bodies. */
  function filledQueue(name: string): Array<WeakRef<Uint8Array>> {
    broker.amqp.declareQueue(name, { passive: false, durable: false, exclusive: false, autoDelete: false, arguments: {}, owner });
    const properties = encodeProperties({});
    return Array.from({ length: messagesPerQueue }, (_, i) => {
      const body = new Uint8Array(bodyBytes).fill(i);
      broker.amqp.publish({ exchange: '', routingKey: name, body, properties }, { persistent: false, from: owner });
      return new WeakRef(body);
    });
  }

  it('a durable queue\'s entries (its projection\'s state) are collected once the queue is deleted, though /api/queues listed it last', async () => {
    const name = 'durable-listed';
    broker.amqp.declareQueue(name, { passive: false, durable: true, exclusive: false, autoDelete: false, arguments: {}, owner });
    const properties = encodeProperties({ deliveryMode: 2 });
    const published = Array.from({ length: messagesPerQueue }, () =>
      broker.amqp.publish({ exchange: '', routingKey: name, body: new Uint8Array(16), properties }, { persistent: true, from: owner }).durable);
    await Promise.all(published);
    const state = new WeakRef(broker.state.queues.get(name)!);
    expect(state.deref()?.pending.size).toBe(messagesPerQueue);
    expect(await (await fetch(`${base}/api/queues`)).text()).toContain(name);

    await broker.amqp.deleteQueue(name, { ifUnused: false, ifEmpty: false, owner }).durable;
    expect(broker.state.queues.has(name)).toBe(false);
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(state.deref()).toBeUndefined();
  });

  for (const path of ['/api/queues', '/api/queues?columns=name,messages', '/metrics/per-object']) {
    it(`are collected once the queue is deleted, though ${path} listed it last`, async () => {
      const name = `listed-by-${path}`;
      const bodies = filledQueue(name);
      const listed = await fetch(`${base}${path}`);
      expect(listed.status).toBe(200);
      expect(await listed.text()).toContain(name);
      expect(broker.queues.get(name)?.readyCount).toBe(messagesPerQueue);

      expect(broker.amqp.deleteQueue(name, { ifUnused: false, ifEmpty: false, owner }).messageCount).toBe(messagesPerQueue);
      // A turn of the event loop: no reference of this one's (the weak ones kept theirs until it ended) is left.
      await new Promise((resolve) => setImmediate(resolve));
      gc();
      expect(bodies.filter((body) => body.deref() !== undefined)).toHaveLength(0);
    });
  }
});
