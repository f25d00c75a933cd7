/**
 * Queued messages are references into the log: their bodies come back from
 * the recent-message cache or from the segment. For any sequence of
 * publishes (AMQP into a durable queue, MQTT to an offline persistent
 * session), consumes, snapshots, retention and restarts over the segmented
 * log, every delivered body is byte for byte the one published under that
 * id, and every published, unconsumed message is delivered in the end.
 * The cache size is drawn too (0: every read goes to the segment).
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import type { AmqpConsumer, MqttClientLink, MqttOutgoingPublish, QueueDelivery } from '../../src/core/api.js';
import { SegmentedLog } from '../../src/log/index.js';
import { announceSeed, tempDirectory, testSeed } from '../support/kit.js';

const persistent = new Uint8Array([0x10, 0x00, 2]);
const roots: Array<{ remove(): void }> = [];
afterAll(() => roots.forEach((r) => r.remove()));

const command = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('publish' as const), size: fc.integer({ min: 0, max: 3000 }), to: fc.constantFrom('queue' as const, 'session' as const) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('consume' as const), count: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 1, arbitrary: fc.constant({ op: 'snapshot' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'restart' as const }) },
);

/** The body of message `id`: its id, then bytes that depend on it, `size` long in all. */
function bodyOf(id: number, size: number): Buffer {
  const body = Buffer.alloc(Math.max(4, size));
  body.writeUInt32BE(id, 0);
  for (let i = 4; i < body.length; i++) body[i] = (id * 31 + i * 7) & 0xff;
  return body;
}

class SessionLink implements MqttClientLink {
  readonly received: MqttOutgoingPublish[] = [];
  sendPublish(publish: MqttOutgoingPublish): boolean { this.received.push(publish); return true; }
  sendPubrel(): void {}
  takenOver(): undefined { return undefined; }
  readFailed(error: Error): void { throw error; }
}

describe('every delivered body is the published one', () => {
  it('from the cache or the segment, across snapshots, retention and restarts', async () => {
    announceSeed('payload round trip');
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 60 }), fc.constantFrom(0, 4096, 64 << 20), async (commands, cacheBytes) => {
        const root = tempDirectory('cairn-payload-');
        roots.push(root);
        const published = new Map<number, Buffer>();
        const consumed = new Set<number>();
        let nextId = 1;
        const open = async (): Promise<{ log: SegmentedLog; broker: Broker }> => {
          const log = await SegmentedLog.open({ dir: root.path, segmentBytesMax: 2048, retentionBytes: 0 });
          const broker = Broker.open({ log, limits: { messageCacheBytes: cacheBytes, snapshotEveryRecords: 0, sessionQueueMessagesMax: 10_000 } });
          return { log, broker };
        };
        let { log, broker } = await open();
        await broker.amqp.declareQueue('q', { passive: false, durable: true, exclusive: false, autoDelete: false, arguments: {}, owner: 'o' }).durable;
        const subscriber = broker.mqtt.connect('sub', false, new SessionLink());
        await subscriber.durable;
        await subscriber.session.subscribe([{ filter: 't', qos: 1 }]).durable;
        subscriber.session.detach();
        const publisher = (): ReturnType<Broker['mqtt']['connect']>['session'] => broker.mqtt.connect('pub', true, new SessionLink()).session;
        let pub = publisher();
        const check = (body: Uint8Array): number => {
          const id = Buffer.from(body).readUInt32BE(0);
          expect(Buffer.from(body).equals(published.get(id)!), `body of message ${id}`).toBe(true);
          return id;
        };
        const drainSession = (): void => {
          const link = new SessionLink();
          const { session } = broker.mqtt.connect('sub', false, link);
          session.start();
          for (const p of link.received) {
            consumed.add(check(p.payload));
            session.puback(p.packetId!);
          }
          session.detach();
        };
        for (const c of commands) {
          if (c.op === 'publish') {
            const id = nextId++;
            const body = bodyOf(id, c.size);
            published.set(id, body);
            if (c.to === 'queue') await broker.amqp.publish({ exchange: '', routingKey: 'q', body, properties: persistent }, { persistent: true, from: 'p' }).durable;
            else await pub.publish({ topic: 't', payload: body, qos: 1, retain: false, packetId: id % 65535 + 1 }).durable;
          } else if (c.op === 'consume') {
            for (let i = 0; i < c.count; i++) {
              const { delivery } = broker.amqp.get('q', { noAck: false, owner: 'o' });
              if (!delivery) break;
              consumed.add(check(delivery.message.body));
              broker.amqp.settle(delivery, 'ack');
            }
            drainSession();
          } else if (c.op === 'snapshot') {
            await broker.flush();
            await broker.snapshot();
          } else {
            await broker.flush();
            await log.close();
            ({ log, broker } = await open());
            pub = publisher();
          }
        }
        // The end: everything not consumed yet is delivered now, after one more restart.
        await broker.flush();
        await log.close();
        ({ log, broker } = await open());
        const held: QueueDelivery[] = [];
        const consumer: AmqpConsumer = { tag: 'drain', noAck: false, canAccept: () => true, deliver: (d) => held.push(d), cancelledByBroker: () => undefined, readFailed: (error) => { throw error; } };
        broker.amqp.consume('q', consumer, { exclusive: false, owner: 'o' });
        for (const d of held) consumed.add(check(d.message.body));
        drainSession();
        expect([...published.keys()].filter((id) => !consumed.has(id))).toEqual([]);
        await log.close();
      }),
      {
        seed: testSeed,
        numRuns: 25,
        // Old segments full of queued messages, then snapshots (with retention) and a restart: the pin must keep them.
        examples: [[[
          ...Array.from({ length: 12 }, () => ({ op: 'publish' as const, size: 1000, to: 'queue' as const })),
          ...Array.from({ length: 4 }, () => ({ op: 'publish' as const, size: 1000, to: 'session' as const })),
          { op: 'snapshot' as const }, { op: 'publish' as const, size: 10, to: 'queue' as const }, { op: 'snapshot' as const }, { op: 'restart' as const },
        ], 0]],
      },
    );
  }, 120_000);
});
