/**
 * A damaged record under a queued message. Queued messages are read back from
 * their segment when delivered, so a flipped byte there is met only then: the
 * consumer's connection is closed with 541 INTERNAL_ERROR naming the LSN and
 * the segment, the message stays queued, the error is logged, and the broker
 * stays up — another queue keeps flowing and a new connection still sees the
 * damaged message counted in its queue.
 *
 * The record lies before the newest snapshot, so start-up does not read it
 * (a damaged record that replay needs refuses start-up: log-damage.test.ts).
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import amqp from 'amqplib';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { parseServeArgs } from '../../src/config.js';
import { SegmentedLog } from '../../src/log/index.js';
import { startCairn } from '../../src/server.js';
import { tempDirectory, until } from '../support/kit.js';

const root = tempDirectory('cairn-queued-damage-');
afterAll(() => root.remove());

const marker = Buffer.from('DAMAGED-QUEUED-MESSAGE-0123456789');
const persistent = new Uint8Array([0x10, 0x00, 2]);
const declare = { passive: false, durable: true, exclusive: false, autoDelete: false, arguments: {}, owner: 'setup' };

describe('a damaged record under a queued message', () => {
  it('closes only the consumer that met it, naming the LSN; the message stays queued and other queues flow', async () => {
    const dir = join(root.path, 'data');
    const log = await SegmentedLog.open({ dir, segmentBytesMax: 4096 });
    const broker = Broker.open({ log, limits: { snapshotEveryRecords: 0 } });
    await broker.amqp.declareQueue('damaged', declare).durable;
    await broker.amqp.declareQueue('healthy', declare).durable;
    await broker.amqp.publish({ exchange: '', routingKey: 'damaged', body: marker, properties: persistent }, { persistent: true, from: 'setup' }).durable;
    const damagedLsn = broker.state.lastLsn;
    for (let i = 0; i < 40; i++) {
      await broker.amqp.publish({ exchange: '', routingKey: 'healthy', body: Buffer.from(`healthy ${i} ${'x'.repeat(100)}`), properties: persistent }, { persistent: true, from: 'setup' }).durable;
    }
    await broker.snapshot();
    await log.close();

    // Flip one byte of the payload inside its segment.
    const segment = fs.readdirSync(dir).filter((f) => f.endsWith('.seg')).find((f) => fs.readFileSync(join(dir, f)).includes(marker))!;
    const bytes = fs.readFileSync(join(dir, segment));
    bytes[bytes.indexOf(marker) + 3]! ^= 0xff;
    fs.writeFileSync(join(dir, segment), bytes);

    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const cairn = await startCairn(parseServeArgs(['--data', dir, '--mqtt-port', 'off', '--amqp-port', '0', '--http-port', 'off', '--segment-bytes', '4096'], {}), logger);
    try {
      const url = `amqp://127.0.0.1:${cairn.amqpPort!}`;
      const victim = await amqp.connect(url);
      const closed = new Promise<Error>((resolve) => victim.on('error', resolve));
      const victimChannel = await victim.createChannel();
      victimChannel.on('error', () => undefined);
      let victimGot = 0;
      await victimChannel.consume('damaged', () => { victimGot++; });
      const error = await closed;
      expect(error.message).toContain('541');
      expect(error.message).toContain(`LSN ${damagedLsn}`);
      expect(error.message).toContain(segment);
      expect(victimGot).toBe(0);
      expect(lines.some((l) => l['level'] === 50 && JSON.stringify(l).includes(`LSN ${damagedLsn}`))).toBe(true);

      const other = await amqp.connect(url);
      other.on('error', () => undefined);
      const channel = await other.createChannel();
      const received: string[] = [];
      await channel.consume('healthy', (m) => { if (m) { received.push(m.content.toString()); channel.ack(m); } });
      await until(() => received.length === 40, 'the healthy queue delivers all 40 messages');
      expect(received[0]).toMatch(/^healthy 0 /);
      expect((await channel.checkQueue('damaged')).messageCount).toBe(1);
      await other.close();
    } finally {
      await cairn.close();
    }
  }, 60_000);
});
