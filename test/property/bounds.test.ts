/**
 * Bounds drop exactly the oldest: for any number of messages published to an
 * offline persistent MQTT session or a durable AMQP queue with no consumer,
 * what remains is exactly the newest `bound` of them, in order, the drop
 * counter says how many went, and a replay of the log agrees (the drops are
 * records, so a restart never resurrects what the bound discarded).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { MemoryLog } from '../../src/core/record-log.js';
import { encodeState } from '../../src/projections/snapshot-codec.js';

const noLink = { sendPublish: () => true, sendPubrel: () => undefined, takenOver: () => undefined, readFailed: (error: Error) => { throw error; } };
const text = (bytes: Uint8Array): string => Buffer.from(bytes).toString();

describe('bounds drop exactly the oldest', () => {
  it('offline persistent MQTT session', async () => {
    await fc.assert(fc.asyncProperty(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 0, max: 30 }), async (bound, count) => {
      const log = new MemoryLog();
      const broker = Broker.open({ log, limits: { sessionQueueMessagesMax: bound } });
      const sub = broker.mqtt.connect('sub', false, noLink);
      await sub.durable;
      await sub.session.subscribe([{ filter: 't', qos: 1 }]).durable;
      sub.session.detach();
      const pub = broker.mqtt.connect('pub', true, noLink).session;
      for (let i = 0; i < count; i++) await pub.publish({ topic: 't', payload: Buffer.from(String(i)), qos: 1, retain: false, packetId: 1 + i }).durable;
      await broker.flush();
      const session = broker.state.sessions.get('sub')!;
      const kept = Array.from({ length: Math.min(count, bound) }, (_, k) => String(count - Math.min(count, bound) + k));
      expect([...session.pending.entries()].map((e) => text(broker.messageOf(e).payload))).toEqual(kept);
      expect(session.dropped).toBe(Math.max(0, count - bound));
      expect(encodeState(Broker.open({ log }).state)).toEqual(encodeState(broker.state));
    }), { numRuns: 60 });
  });

  it('durable AMQP queue without consumers', async () => {
    await fc.assert(fc.asyncProperty(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 0, max: 30 }), async (bound, count) => {
      const log = new MemoryLog();
      const broker = Broker.open({ log, limits: { queueReadyMessagesMax: bound } });
      await broker.amqp.declareQueue('q', { passive: false, durable: true, exclusive: false, autoDelete: false, arguments: {}, owner: 'o' }).durable;
      for (let i = 0; i < count; i++) {
        await broker.amqp.publish({ exchange: '', routingKey: 'q', body: Buffer.from(String(i)), properties: new Uint8Array([0x10, 0, 2]) }, { persistent: true, from: 'p' }).durable;
      }
      await broker.flush();
      const queue = broker.state.queues.get('q')!;
      const kept = Array.from({ length: Math.min(count, bound) }, (_, k) => String(count - Math.min(count, bound) + k));
      expect([...queue.pending.entries()].map((e) => text(broker.messageOf(e).payload))).toEqual(kept);
      expect(queue.dropped).toBe(Math.max(0, count - bound));
      const restarted = Broker.open({ log });
      expect(encodeState(restarted.state)).toEqual(encodeState(broker.state));
      expect(restarted.queues.get('q')!.readyCount).toBe(kept.length);
    }), { numRuns: 60 });
  });

  it('bounds in bytes: the session and the queue keep the newest messages that fit, dropping the oldest', async () => {
    await fc.assert(fc.asyncProperty(fc.integer({ min: 1, max: 400 }), fc.array(fc.integer({ min: 0, max: 150 }), { maxLength: 30 }), async (bytesMax, sizes) => {
      const log = new MemoryLog();
      const broker = Broker.open({ log, limits: { sessionQueueBytesMax: bytesMax, queueReadyBytesMax: bytesMax } });
      await broker.amqp.declareQueue('q', { passive: false, durable: true, exclusive: false, autoDelete: false, arguments: {}, owner: 'o' }).durable;
      const sub = broker.mqtt.connect('sub', false, noLink);
      await sub.durable;
      await sub.session.subscribe([{ filter: 't', qos: 1 }]).durable;
      sub.session.detach();
      const pub = broker.mqtt.connect('pub', true, noLink).session;
      // The model: before each message, drop the oldest while the new one would not fit.
      const model: Array<{ id: number; size: number }> = [];
      for (const [id, size] of sizes.entries()) {
        while (model.length > 0 && model.reduce((sum, m) => sum + m.size, 0) + size > bytesMax) model.shift();
        model.push({ id, size });
        const body = Buffer.alloc(size, id);
        await broker.amqp.publish({ exchange: '', routingKey: 'q', body, properties: new Uint8Array([0x10, 0, 2]) }, { persistent: true, from: 'p' }).durable;
        await pub.publish({ topic: 't', payload: body, qos: 1, retain: false, packetId: id + 1 }).durable;
      }
      await broker.flush();
      const sizesOf = (entries: Iterable<{ size: number }>): number[] => [...entries].map((e) => e.size);
      expect(sizesOf(broker.state.queues.get('q')!.pending.entries())).toEqual(model.map((m) => m.size));
      expect(sizesOf(broker.state.sessions.get('sub')!.pending.entries())).toEqual(model.map((m) => m.size));
      expect(broker.state.queues.get('q')!.dropped).toBe(sizes.length - model.length);
      expect(broker.state.sessions.get('sub')!.dropped).toBe(sizes.length - model.length);
      expect(encodeState(Broker.open({ log }).state)).toEqual(encodeState(broker.state));
    }), { numRuns: 60 });
  });
});
