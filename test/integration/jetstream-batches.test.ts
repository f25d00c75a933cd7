/**
 * The JetStream log publishes records in batches (src/log/jetstream/jetstream-log.ts):
 * records appended together go into one stream message, up to messageBytesMax;
 * retention purges whole messages and never one holding a live record; a
 * stream written before batching (one frame per message, LSN = sequence,
 * fences without a header) still opens, reads and takes appends, and the
 * inspector reads it. On a real three-node nats-server cluster
 * (tools/nats-cluster.ts).
 */
import { describe, expect, it } from 'vitest';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { JetStreamLog, messageBytesMax } from '../../src/log/jetstream/jetstream-log.js';
import { openJetStreamLogReader } from '../../src/log/jetstream/stream-log-reader.js';
import { encodeFrame } from '../../src/log/record.js';
import { useNatsCluster } from '../support/nats-cluster-hooks.js';

const nats = useNatsCluster();
const addressOf = (stream: string) => ({ servers: nats.cluster.servers.split(','), stream, tls: false });
const record = (n: number, payloadBytes = 20) => ({ kind: 6, timestamp: 1_700_000_000_000 + n, body: { n, payload: new Uint8Array(payloadBytes).fill(n & 0xff) } });
const numbers = (log: JetStreamLog) => [...log.read()].map((r) => ({ lsn: r.lsn, n: (r.body as { n: number }).n }));

async function streamState(stream: string): Promise<{ messages: number; first_seq: number; last_seq: number }> {
  return (await (await jetstreamManager(nats.connection)).streams.info(stream)).state;
}

/** Every message's payload size, in sequence order. */
async function payloadSizes(stream: string): Promise<number[]> {
  const { last_seq: last } = await streamState(stream);
  const messages = await (await jetstream(nats.connection).consumers.get(stream)).consume();
  const sizes: number[] = [];
  for await (const message of messages) {
    sizes.push(message.data.length);
    if (message.seq >= last) break;
  }
  messages.stop();
  return sizes;
}

describe('the JetStream log in batches', () => {
  it('records appended together share a message: a pipelined burst takes far fewer messages than records, none above messageBytesMax', async () => {
    const stream = 'batches-burst';
    const log = await JetStreamLog.open({ address: addressOf(stream) });
    // 400 appenders in closed loops, 5 appends each, as pipelined publishers are.
    await Promise.all(Array.from({ length: 400 }, async (_, appender) => {
      for (let round = 0; round < 5; round++) await log.append([record(round * 400 + appender)]);
    }));
    const small = await streamState(stream);
    expect(log.durableLsn).toBe(2000);
    console.log(`burst: 2000 records in ${small.messages} messages`);
    expect(small.messages).toBeLessThan(2000 / 10);

    // 3 MiB in one tick: cut at messageBytesMax.
    const large = await log.append(Array.from({ length: 48 }, (_, i) => record(2001 + i, 64 * 1024)));
    const sizes = (await payloadSizes(stream)).slice(small.messages);
    expect(large).toEqual(Array.from({ length: 48 }, (_, i) => 2001 + i));
    expect(sizes.length).toBeGreaterThanOrEqual(Math.ceil((48 * 64 * 1024) / messageBytesMax));
    expect(sizes.length).toBeLessThan(48);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(messageBytesMax);

    await log.close();
    const reopened = await JetStreamLog.open({ address: addressOf(stream), connection: nats.connection });
    expect(numbers(reopened)).toEqual(Array.from({ length: 2048 }, (_, i) => ({ lsn: i + 1, n: i < 2000 ? expect.any(Number) as unknown : i + 1 })));
    expect(new Set(numbers(reopened).slice(0, 2000).map((r) => r.n)).size).toBe(2000);
    await reopened.close();
  });

  it('retention purges whole messages below the newest snapshot and the oldest queued record, never the one holding either', async () => {
    const stream = 'batches-retention';
    const log = await JetStreamLog.open({ address: addressOf(stream) });
    // LSNs 1..50 in one message (sequence 1), then 51..60 one message each (sequences 2..11).
    await log.append(Array.from({ length: 50 }, (_, i) => record(i + 1)));
    for (let n = 51; n <= 60; n++) await log.append([record(n)]);
    expect((await streamState(stream)).messages).toBe(11);

    // The snapshot's LSN is inside the first message: that message stays whole.
    await log.writeSnapshot(30, new Uint8Array([30]));
    expect(await log.applyRetention()).toEqual({ purged: 0 });
    expect(log.firstLsn).toBe(1);

    // A newer snapshot, but a queue still holds LSN 20: nothing goes either.
    await log.writeSnapshot(55, new Uint8Array([55]));
    expect(await log.applyRetention({ keepFromLsn: 20 })).toEqual({ purged: 0 });

    // Up to the message holding 55: the batch and the messages of 51..54 go.
    expect(await log.applyRetention()).toEqual({ purged: 5 });
    expect(log.firstLsn).toBe(55);
    expect(await streamState(stream)).toMatchObject({ messages: 6, first_seq: 6 });
    expect(() => log.readRecord(54)).toThrow(expect.objectContaining({ code: 'ENORECORD' }));
    await log.close();

    const reopened = await JetStreamLog.open({ address: addressOf(stream), connection: nats.connection });
    expect({ firstLsn: reopened.firstLsn, nextLsn: reopened.nextLsn }).toEqual({ firstLsn: 55, nextLsn: 61 });
    expect(numbers(reopened).map((r) => r.n)).toEqual([55, 56, 57, 58, 59, 60]);
    await expect(reopened.append([record(61)])).resolves.toEqual([61]);
    await reopened.close();
  });

  it('a stream written before batching (one frame per message, fences without a header) opens, reads, takes appends and is inspected', async () => {
    const stream = 'batches-old-format';
    const log = await JetStreamLog.open({ address: addressOf(stream), connection: nats.connection });
    await log.close();
    // What a writer before batching left: a fence at sequence 1 (LSN 1), records 2..6, a second writer's fence at 7, records 8..9.
    const js = jetstream(nats.connection);
    for (let sequence = 1; sequence <= 9; sequence++) {
      const data = sequence === 1 || sequence === 7 ? new Uint8Array(0) : encodeFrame(sequence, record(sequence));
      expect((await js.publish(`${stream}.log`, data, { expect: { lastSequence: sequence - 1 } })).seq).toBe(sequence);
    }

    const writer = await JetStreamLog.open({ address: addressOf(stream), connection: nats.connection, fence: true });
    expect(numbers(writer)).toEqual([2, 3, 4, 5, 6, 8, 9].map((n) => ({ lsn: n, n })));
    for (const fence of [1, 7, 10]) expect(() => writer.readRecord(fence)).toThrow(expect.objectContaining({ code: 'ENORECORD', message: expect.stringContaining('fence') as unknown }));
    await expect(writer.append([11, 12, 13].map((n) => record(n)))).resolves.toEqual([11, 12, 13]);
    await writer.close();
    // The new fence and the three records took one message each: sequences 10 and 11.
    expect((await streamState(stream)).messages).toBe(11);

    const reopened = await JetStreamLog.open({ address: addressOf(stream), connection: nats.connection });
    expect(numbers(reopened)).toEqual([2, 3, 4, 5, 6, 8, 9, 11, 12, 13].map((n) => ({ lsn: n, n })));
    expect(reopened.nextLsn).toBe(14);
    await reopened.close();

    const reader = await openJetStreamLogReader(addressOf(stream));
    expect(reader.verify()).toMatchObject({ ok: true, records: 10, firstLsn: 1, lastLsn: 13 });
    expect([...reader.read({ lsn: 8 })].map((r) => r.lsn)).toEqual([8, 9, 11, 12, 13]);
  });
});
