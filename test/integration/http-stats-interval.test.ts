/**
 * /metrics and /metrics/per-object with a stats interval (`statsIntervalMs`,
 * `cairn serve --stats-interval`): within the interval of the last render a
 * scrape gets the same answer although queues were declared and published to
 * meanwhile (figures up to one interval old, as RabbitMQ's); once the
 * interval has passed on the server's clock the answers show the changes.
 * With an interval of 0 every scrape shows them at once. Real HTTP (global
 * fetch, which asks for gzip) against a real Broker on a MemoryLog.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { MemoryLog } from '../../src/core/record-log.js';
import { startHttpServer, type HttpServerHandle } from '../../src/http/server.js';
import { silentLogger } from '../../src/logger.js';
import { Metrics } from '../../src/metrics.js';
import { encodeProperties } from '../../src/protocols/amqp/codec/index.js';

const owner = 'connection-1';
const statsIntervalMs = 5_000;

function declare(broker: Broker, name: string): void {
  broker.amqp.declareQueue(name, { passive: false, durable: false, exclusive: false, autoDelete: false, arguments: {}, owner });
}

function publish(broker: Broker, queue: string): void {
  broker.amqp.publish({ exchange: '', routingKey: queue, body: new Uint8Array(8), properties: encodeProperties({}) }, { persistent: false, from: owner });
}

async function text(base: string, path: string): Promise<string> {
  const response = await fetch(`${base}${path}`);
  expect(response.status).toBe(200);
  return response.text();
}

/** Enough queues that /metrics/per-object is over gzipBytesMin and goes through the gzip memo too. */
const fillerQueues = 1_000;

describe('the metrics expositions and the stats interval', () => {
  let server: HttpServerHandle | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function serve(interval: number, clock: () => number): Promise<{ broker: Broker; base: string }> {
    const broker = Broker.open({ log: new MemoryLog() });
    for (let i = 0; i < fillerQueues; i++) declare(broker, `filler-${i}`);
    server = await startHttpServer({ broker, host: '127.0.0.1', port: 0, logger: silentLogger(), metrics: new Metrics(), version: '0.1.0-test', clock, statsIntervalMs: interval });
    return { broker, base: `http://127.0.0.1:${server.port}` };
  }

  it('answers with the last render within the interval, and with the changes once it has passed', async () => {
    let now = 1_000_000;
    const { broker, base } = await serve(statsIntervalMs, () => now);
    declare(broker, 'watched');
    publish(broker, 'watched');
    const perObject = await text(base, '/metrics/per-object');
    const aggregated = await text(base, '/metrics');
    expect(perObject).toContain('rabbitmq_queue_messages_ready{vhost="/",queue="watched"} 1\n');
    expect(aggregated).toMatch(/^rabbitmq_queues 1001$/m);

    publish(broker, 'watched');
    declare(broker, 'declared-later');
    now += statsIntervalMs - 1;
    expect(await text(base, '/metrics/per-object')).toBe(perObject);
    expect(await text(base, '/metrics')).toBe(aggregated);

    now += 1;
    const later = await text(base, '/metrics/per-object');
    expect(later).toContain('rabbitmq_queue_messages_ready{vhost="/",queue="watched"} 2\n');
    expect(later).toContain('queue="declared-later"');
    expect(await text(base, '/metrics')).toMatch(/^rabbitmq_queues 1002$/m);
  });

  it('shows every change at once with an interval of 0', async () => {
    const { broker, base } = await serve(0, Date.now);
    declare(broker, 'watched');
    publish(broker, 'watched');
    expect(await text(base, '/metrics/per-object')).toContain('rabbitmq_queue_messages_ready{vhost="/",queue="watched"} 1\n');
    publish(broker, 'watched');
    declare(broker, 'declared-later');
    const perObject = await text(base, '/metrics/per-object');
    expect(perObject).toContain('rabbitmq_queue_messages_ready{vhost="/",queue="watched"} 2\n');
    expect(perObject).toContain('queue="declared-later"');
    expect(await text(base, '/metrics')).toMatch(/^rabbitmq_queues 1002$/m);
  });
});
