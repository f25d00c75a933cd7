/**
 * A queue's x-max-length / x-max-length-bytes with either overflow behaviour,
 * under the broker-wide bounds too, against a model of RabbitMQ's rules:
 * - reject-publish refuses a message when ready count + 1 or ready bytes +
 *   its size would pass the queue's limit (the publish result says so);
 * - otherwise the oldest ready messages are dropped while the new one would
 *   not fit under the smaller of each limit; one that the queue's own limits
 *   cannot hold even when empty is dropped with everything older.
 * The durable queue's projection holds what the model holds, and a replay of
 * the log equals the live state.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { MemoryLog } from '../../src/core/record-log.js';
import { encodeState } from '../../src/projections/snapshot-codec.js';
import { announceSeed, testSeed } from '../support/kit.js';

const persistent = new Uint8Array([0x10, 0, 2]);

describe('queue length limits', () => {
  it('keep what the model keeps, refuse what it refuses, and replay to the same state', async () => {
    announceSeed('queue length limits');
    const limit = (max: number): fc.Arbitrary<number | undefined> => fc.option(fc.integer({ min: 0, max }), { nil: undefined });
    await fc.assert(fc.asyncProperty(
      limit(6), limit(300), fc.constantFrom('drop-head', 'reject-publish', undefined), fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 400 }),
      fc.array(fc.integer({ min: 0, max: 120 }), { maxLength: 25 }),
      async (maxLength, maxBytes, overflow, globalMessages, globalBytes, sizes) => {
        const log = new MemoryLog();
        const broker = Broker.open({ log, limits: { queueReadyMessagesMax: globalMessages, queueReadyBytesMax: globalBytes } });
        const args: Record<string, unknown> = {};
        if (maxLength !== undefined) args['x-max-length'] = maxLength;
        if (maxBytes !== undefined) args['x-max-length-bytes'] = maxBytes;
        if (overflow !== undefined) args['x-overflow'] = overflow;
        await broker.amqp.declareQueue('q', { passive: false, durable: true, exclusive: false, autoDelete: false, arguments: args, owner: 'o' }).durable;

        const ownMessages = maxLength ?? Infinity;
        const ownBytes = maxBytes ?? Infinity;
        const model: Array<{ id: number; size: number }> = [];
        const bytes = (): number => model.reduce((sum, m) => sum + m.size, 0);
        for (const [id, size] of sizes.entries()) {
          const refused = overflow === 'reject-publish' && (model.length + 1 > ownMessages || bytes() + size > ownBytes);
          const result = broker.amqp.publish({ exchange: '', routingKey: 'q', body: Buffer.alloc(size, id), properties: persistent }, { persistent: true, from: 'p' });
          expect(result.rejected, `message ${id} (${size} B)`).toBe(refused);
          await result.durable;
          if (refused) continue;
          const fits = ownMessages >= 1 && size <= ownBytes;
          const messagesMax = Math.min(ownMessages, globalMessages);
          const bytesMax = Math.min(ownBytes, globalBytes);
          while (model.length > 0 && (!fits || model.length >= messagesMax || bytes() + size > bytesMax)) model.shift();
          if (fits) model.push({ id, size });
        }
        await broker.flush();
        const pending = [...broker.state.queues.get('q')!.pending.entries()];
        expect(pending.map((e) => [broker.messageOf(e).payload[0] ?? -1, e.size])).toEqual(model.map((m) => [m.size === 0 ? -1 : m.id, m.size]));
        expect(broker.queues.get('q')!.readyCount).toBe(model.length);
        expect(encodeState(Broker.open({ log }).state)).toEqual(encodeState(broker.state));
      },
    ), { numRuns: 150, seed: testSeed });
  });
});
