/**
 * MessageStore: a queued message's body comes from the recent-message cache or, once evicted, from the
 * log; a record not appended yet is never evicted; and a message far past the cache's window starts a
 * new window instead of growing one slot per LSN in between.
 */
import { describe, expect, it } from 'vitest';
import { MessageStore, MessageReadError, recentReadBytesMax } from '../../src/core/message-store.js';
import { RecordKind, type BrokerRecord } from '../../src/projections/records.js';
import type { StoredMessage } from '../../src/projections/state.js';

class FakeLog {
  nextLsn = 1;
  reads = 0;
  readonly records = new Map<number, BrokerRecord>();
  readRecord(lsn: number): BrokerRecord {
    this.reads++;
    const record = this.records.get(lsn);
    if (!record) throw new Error(`no record at LSN ${lsn}`);
    return record;
  }
  append(message: StoredMessage): void {
    this.records.set(message.lsn, { lsn: message.lsn, timestamp: 1, kind: RecordKind.msg, body: { t: message.topic, p: message.payload } });
    this.nextLsn = message.lsn + 1;
  }
}

const messageAt = (lsn: number, bytes = 100): StoredMessage => ({ lsn, timestamp: 1, topic: `t${lsn}`, payload: new Uint8Array(bytes).fill(lsn & 0xff) });

describe('MessageStore', () => {
  it('serves recent messages from memory, evicted ones from the log, and never evicts an unappended one', () => {
    const log = new FakeLog();
    const store = new MessageStore(log, 1000);
    for (let lsn = 1; lsn <= 20; lsn++) {
      const message = messageAt(lsn);
      store.remember(message);
      log.append(message);
    }
    expect(store.cachedBytes).toBeLessThanOrEqual(1000);
    expect(store.read(20).topic).toBe('t20');
    expect(log.reads).toBe(0);
    expect(store.read(1).topic).toBe('t1');
    expect(log.reads).toBe(1);
    // Not appended yet (a deferred publish): kept although over budget.
    const pending = messageAt(21, 5000);
    store.remember(pending);
    expect(store.read(21)).toBe(pending);
    expect(() => store.read(99)).toThrow(MessageReadError);
  });

  it('starts a new window for a message far past the last one', () => {
    const log = new FakeLog();
    const store = new MessageStore(log, 1 << 20);
    const first = messageAt(1);
    store.remember(first);
    log.append(first);
    const far = messageAt(10_000_000);
    store.remember(far);
    log.append(far);
    expect(store.read(10_000_000)).toBe(far);
    expect(store.cachedBytes).toBeLessThan(1000);
    expect(store.read(1).topic).toBe('t1');
    expect(log.reads).toBe(1);
  });

  it('keeps its own copy of a body that is a view into a larger buffer (a socket read chunk), the same bytes', () => {
    const log = new FakeLog();
    const store = new MessageStore(log, 1 << 20);
    const chunk = Buffer.alloc(64 * 1024, 7);
    chunk.write('hello', 1000);
    const viewed: StoredMessage = { lsn: 1, timestamp: 1, topic: 't', payload: chunk.subarray(1000, 2024), properties: chunk.subarray(3000, 3010) };
    store.remember(viewed);
    log.append(viewed);
    const cached = store.read(1);
    expect(Buffer.from(cached.payload).equals(viewed.payload)).toBe(true);
    expect(Buffer.from(cached.properties!).equals(viewed.properties!)).toBe(true);
    expect(cached.payload.buffer).not.toBe(chunk.buffer);
    expect(cached.properties!.buffer).not.toBe(chunk.buffer);
    expect(log.reads).toBe(0);
    // A body that owns its buffer (or shares a small pool slab) is kept as it is.
    const own = messageAt(2, 1024);
    store.remember(own);
    expect(store.read(2)).toBe(own);
  });

  it('keeps the last few messages read from the log: a queue head read to arm its expiry timer and then taken is read once', () => {
    const log = new FakeLog();
    const store = new MessageStore(log, 0);
    for (let lsn = 1; lsn <= 40; lsn++) log.append(messageAt(lsn));
    expect(store.read(5).topic).toBe('t5');
    expect(store.read(5).topic).toBe('t5');
    expect(log.reads).toBe(1);
    // Four queues' heads, each read twice in turn (peek, then take), cost one read each.
    for (const lsn of [10, 11, 12, 13, 10, 11, 12, 13]) expect(store.read(lsn).topic).toBe(`t${lsn}`);
    expect(log.reads).toBe(5);
    // Bounded: after many other reads, LSN 5 comes from the log again.
    for (let lsn = 14; lsn <= 40; lsn++) store.read(lsn);
    const before = log.reads;
    expect(store.read(5).topic).toBe('t5');
    expect(log.reads).toBe(before + 1);
  });

  it('does not keep a large body read from the log: what it holds stays bounded in bytes, not only in messages', () => {
    const log = new FakeLog();
    const store = new MessageStore(log, 0);
    log.append(messageAt(1, recentReadBytesMax + 1));
    log.append(messageAt(2, recentReadBytesMax));
    for (const lsn of [1, 1, 2, 2]) store.read(lsn);
    expect(log.reads).toBe(3);
  });
});
