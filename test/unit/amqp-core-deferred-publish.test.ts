/**
 * AMQP publishes of one tick share one append (Committer.commitDeferred):
 * their records are appended together at the end of the tick, in call order,
 * and any record made meanwhile — a consumer's deliver, another command's
 * commit — lands after them, so the log never names a seq before its msg.
 */
import { describe, expect, it } from 'vitest';
import type { AmqpConsumer, QueueDelivery } from '../../src/core/api.js';
import { Broker } from '../../src/core/broker.js';
import { MemoryLog } from '../../src/core/record-log.js';
import { RecordKind } from '../../src/projections/records.js';

const persistentProperties = new Uint8Array([0x10, 0, 2]);
const kindNames = new Map<number, string>(Object.entries(RecordKind).map(([name, kind]): [number, string] => [kind, name]));

function kinds(log: MemoryLog): string[] {
  return log.records.map((record) => kindNames.get(record.kind) ?? String(record.kind));
}

async function brokerWithQueue(): Promise<{ broker: Broker; log: MemoryLog }> {
  const log = new MemoryLog();
  const broker = Broker.open({ log });
  await broker.amqp.declareQueue('q', { passive: false, durable: true, exclusive: false, autoDelete: false, arguments: {}, owner: 'test' }).durable;
  return { broker, log };
}

function publish(broker: Broker, text: string): ReturnType<Broker['amqp']['publish']> {
  return broker.amqp.publish({ exchange: '', routingKey: 'q', body: Buffer.from(text), properties: persistentProperties }, { persistent: true, from: 'test' });
}

describe('deferred AMQP publishes', () => {
  it('share one Durable and one append per tick, in call order', async () => {
    const { broker, log } = await brokerWithQueue();
    const before = log.records.length;
    const first = publish(broker, 'a');
    const second = publish(broker, 'b');
    expect(first.durable).toBeDefined();
    expect(second.durable).toBe(first.durable);
    await first.durable;
    const msgs = log.records.slice(before).filter((record) => record.kind === RecordKind.msg);
    expect(msgs.map((record) => Buffer.from((record.body as { p: Uint8Array }).p).toString())).toEqual(['a', 'b']);
    expect(broker.state.queues.get('q')?.pending.size).toBe(2);
  });

  it('append before any record made later in the tick: a delivery, another command', async () => {
    const { broker, log } = await brokerWithQueue();
    const deliveries: QueueDelivery[] = [];
    const consumer: AmqpConsumer = { tag: 'c', noAck: false, canAccept: () => true, deliver: (delivery) => deliveries.push(delivery), cancelledByBroker: () => undefined, readFailed: (error: Error) => { throw error; } };
    broker.amqp.consume('q', consumer, { exclusive: false, owner: 'test' });
    const before = log.records.length;
    const published = publish(broker, 'a');
    // Delivered at once, before the msg record is appended; its deliver record must still follow it.
    expect(deliveries).toHaveLength(1);
    const declared = broker.amqp.declareQueue('r', { passive: false, durable: true, exclusive: false, autoDelete: false, arguments: {}, owner: 'test' });
    await Promise.all([published.durable, declared.durable]);
    await broker.flush();
    // The order the records were made in: the publish, its delivery, then the declaration.
    expect(kinds(log).slice(before)).toEqual(['msg', 'deliver', 'queue']);
  });
});
