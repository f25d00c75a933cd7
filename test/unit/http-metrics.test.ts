/**
 * Unit tests of src/metrics.ts (counters reach the registry; one exposition's
 * queue families show one moment; two Metrics never share series) and
 * src/http/rates.ts (rates over the sample window, with an injected clock).
 */
import { describe, expect, it } from 'vitest';
import type { Broker } from '../../src/core/broker.js';
import { RateSampler, rateSamplesMax } from '../../src/http/rates.js';
import { Metrics } from '../../src/metrics.js';

describe('Metrics', () => {
  it('counts messages per protocol, fsyncs with batch sizes, drops and connections', async () => {
    const metrics = new Metrics();
    metrics.messageIn('mqtt');
    metrics.messageIn('mqtt');
    metrics.messageOut('amqp');
    metrics.fsync(0.003, 7);
    metrics.drop('queue', 2);
    metrics.connectionOpened('amqp');
    metrics.connectionOpened('amqp');
    metrics.connectionClosed('amqp');
    const text = await metrics.text();
    expect(text).toContain('rabbitmq_global_messages_received_total{protocol="mqtt311"} 2');
    expect(text).toContain('rabbitmq_global_messages_received_total{protocol="amqp091"} 0');
    expect(text).toContain('rabbitmq_global_messages_delivered_total{protocol="amqp091"} 1');
    expect(text).toContain('cairn_log_fsyncs_total 1');
    expect(text).toContain('cairn_log_fsync_seconds_bucket{le="0.005"} 1');
    expect(text).toContain('cairn_log_batch_records_sum 7');
    expect(text).toContain('cairn_messages_dropped_total{destination="queue"} 2');
    expect(text).toContain('rabbitmq_connections_opened_total 2');
    expect(text).toContain('rabbitmq_connections_closed_total 1');
    expect(metrics.totals()).toEqual({ messagesIn: { mqtt: 2, amqp: 0 }, messagesOut: { mqtt: 0, amqp: 1 }, fsyncs: 1, connectionsOpened: { mqtt: 0, amqp: 2 } });
    expect(metrics.connectionCount()).toEqual({ mqtt: 0, amqp: 1 });
  });

  it('the aggregated queue families of one exposition show one moment, though the queues change between its families', async () => {
    let reads = 0;
    // Every read of a queue's ready count sees one more message: a queue that changes between two families' reads.
    const queue = { name: 'q', unacked: new Map([[1, {}], [2, {}]]), consumers: [], dropped: 0, get readyCount() { return ++reads; } };
    const broker = {
      queues: new Map([['q', queue]]), sessions: new Map(), exchanges: new Map(),
      state: { sessions: new Map(), queues: new Map(), groups: new Map(), collections: new Map() }, log: { nextLsn: 1 },
    } as unknown as Broker;
    const metrics = new Metrics();
    metrics.collectFrom(broker);
    for (let exposition = 1; exposition <= 2; exposition++) {
      const text = await metrics.text();
      const ready = Number(/^rabbitmq_queue_messages_ready (\d+)$/m.exec(text)?.[1]);
      const messages = Number(/^rabbitmq_queue_messages (\d+)$/m.exec(text)?.[1]);
      expect({ exposition, ready, messages }).toEqual({ exposition, ready: exposition, messages: exposition + 2 });
    }
  });

  it('two instances have separate registries', async () => {
    const a = new Metrics();
    const b = new Metrics();
    a.messageIn('amqp');
    expect(await b.text()).toContain('rabbitmq_global_messages_received_total{protocol="amqp091"} 0');
  });
});

describe('RateSampler', () => {
  it('rates are the change over the kept window, per second', () => {
    let now = 0;
    let nextLsn = 1;
    const metrics = new Metrics();
    const sampler = new RateSampler(metrics, () => nextLsn, () => now);
    expect(sampler.rates().messagesInPerSecond).toEqual({ mqtt: 0, amqp: 0 });
    for (let second = 1; second <= 20; second++) {
      now = second * 1000;
      for (let i = 0; i < 10; i++) metrics.messageIn('mqtt');
      nextLsn += 5;
      sampler.sample();
    }
    now = 20_500;
    const rates = sampler.rates();
    expect(rates.windowSeconds).toBe(rateSamplesMax - 0.5);
    expect(rates.messagesInPerSecond.mqtt).toBeCloseTo((10 * (rateSamplesMax - 1)) / (rateSamplesMax - 0.5), 1);
    expect(rates.recordsPerSecond).toBeCloseTo((5 * (rateSamplesMax - 1)) / (rateSamplesMax - 0.5), 1);
  });
});
