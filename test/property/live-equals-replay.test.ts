/**
 * The central invariant: for any sequence of broker commands, the live state
 * equals the state rebuilt by replaying the log — after every command, and
 * also when starting from a snapshot taken at a random point plus the tail.
 *
 * Commands go through the real core API (test/support/broker-harness.ts), so
 * the records under test are the ones the broker really writes. The log keeps
 * bodies MessagePack-encoded, as the segmented log does, so replay sees what
 * a restart would see.
 */
import { decode, encode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { destinationOf } from '../../src/core/amqp-exchange.js';
import { isDurableEntry } from '../../src/core/destination-runtime.js';
import { Broker, type BrokerLog } from '../../src/core/broker.js';
import type { CoreAppendRecord } from '../../src/core/record-log.js';
import { storedMessageOf } from '../../src/projections/apply.js';
import type { BrokerRecord, MsgBody } from '../../src/projections/records.js';
import { encodeState } from '../../src/projections/snapshot-codec.js';
import { announceSeed } from '../support/kit.js';
import { brokerCommand, BrokerHarness, ingestRoutes, queueLifeCommand, type BrokerCommand } from '../support/broker-harness.js';

class EncodingMemoryLog implements BrokerLog {
  readonly encoded: Array<{ lsn: number; kind: number; timestamp: number; body: Uint8Array }> = [];
  failed: Error | undefined = undefined;
  snapshotSaved: { lsn: number; data: Uint8Array } | undefined;
  get nextLsn(): number { return this.encoded.length + 1; }
  append(records: readonly CoreAppendRecord[]): Promise<number[]> {
    return Promise.resolve(records.map((r) => {
      const lsn = this.nextLsn;
      this.encoded.push({ lsn, kind: r.kind, timestamp: r.timestamp, body: encode(r.body) });
      return lsn;
    }));
  }
  sync(): Promise<void> { return Promise.resolve(); }
  *read(from: { lsn?: number } = {}): IterableIterator<BrokerRecord> {
    for (const r of this.encoded.slice(Math.max(0, (from.lsn ?? 1) - 1))) yield { ...r, body: decode(r.body) };
  }
  readRecord(lsn: number): BrokerRecord {
    const r = this.encoded[lsn - 1];
    if (r === undefined) throw new RangeError(`no record at LSN ${lsn}`);
    return { ...r, body: decode(r.body) };
  }
  loadSnapshot(): { lsn: number; data: Uint8Array } | undefined { return this.snapshotSaved; }
  writeSnapshot(lsn: number, data: Uint8Array): Promise<void> { this.snapshotSaved = { lsn, data }; return Promise.resolve(); }
}

/** Runs `commands`, comparing live and replayed state after each, then restarts over the log. */
async function checkLiveEqualsReplay(commands: readonly BrokerCommand[]): Promise<void> {
  const harness = new BrokerHarness(new EncodingMemoryLog());
  for (const c of commands) {
    await harness.run(c);
    const live = encodeState(harness.broker.state);
    expect(harness.replayed()).toEqual(live);
    const fromSnapshot = harness.fromSnapshotPlusTail();
    if (fromSnapshot) expect(fromSnapshot).toEqual(live);
  }
  // Every queued MQTT message reads back from the log as the live broker remembered it (MQTT 5 properties included).
  for (const session of harness.broker.state.sessions.values()) {
    for (const entry of session.pending.entries()) {
      if (entry.held !== undefined) continue;
      const live = harness.broker.store.read(entry.lsn);
      const record = harness.log.readRecord!(entry.lsn);
      expect(storedMessageOf(record.body as MsgBody, record.lsn, record.timestamp).mqttProperties).toEqual(live.mqttProperties);
    }
  }
  // The live runtime holds exactly the projection's durable entries: what left the runtime (acked,
  // dropped, expired, dead-lettered) left the log's state too.
  for (const queue of harness.broker.state.queues.values()) {
    const runtime = harness.broker.queues.get(queue.name)!;
    const held: number[] = [];
    // Taking every ready entry is the only way to list them (the harness broker is not used after this).
    for (let entry = runtime.ready.shift(); entry !== undefined; entry = runtime.ready.shift()) if (isDurableEntry(entry)) held.push(entry.seq);
    for (const entry of runtime.unacked.values()) if (entry.durable) held.push(entry.seq);
    expect(held.sort((a, b) => a - b), `queue ${queue.name}: runtime against projection`).toEqual([...queue.pending.keys()]);
  }
  // A restart over the same log (at the same time) gives the same state again.
  const restarted = Broker.open({ log: harness.log, ingestRoutes, clock: harness.clock.now, timers: harness.clock });
  expect(encodeState(restarted.state)).toEqual(encodeState(harness.broker.state));
  // ...and the same routing: every binding between durable ends (to queues and to exchanges, with arguments) is back.
  expect(durableBindings(restarted)).toEqual(durableBindings(harness.broker));
  // ...and its runtime holds every recovered message ready, in seq order: each is delivered,
  // or, past its TTL when it reaches the head, expired — and then no longer in the projection.
  for (const queue of restarted.state.queues.values()) {
    const runtime = restarted.queues.get(queue.name)!;
    const recovered = [...queue.pending.keys()];
    // An expiry here may dead-letter into another queue, whose overflow may dead-letter back into this one
    // while it is drained: such arrivals take seqs from nextSeq on, and are not among the recovered.
    const arrivalsFrom = runtime.nextSeq;
    const seqs: number[] = [];
    for (let d = restarted.amqp.get(queue.name, { noAck: false, owner: 'o' }).delivery; d; d = restarted.amqp.get(queue.name, { noAck: false, owner: 'o' }).delivery) seqs.push(d.seq);
    const expired = recovered.filter((seq) => !seqs.includes(seq));
    expect(seqs.filter((seq) => seq < arrivalsFrom)).toEqual(recovered.filter((seq) => !expired.includes(seq)));
    expect(runtime.unacked.size).toBe(seqs.length);
    await restarted.flush();
    for (const seq of expired) expect(queue.pending.has(seq), `expired seq ${seq} of ${queue.name} left the projection`).toBe(false);
  }
  // ...and each persistent shared-subscription group's messages are ready in its runtime, in seq order (taken to list them: the broker is not used after this).
  for (const group of restarted.state.groups.values()) {
    expect(restarted.shared.groups.get(group.name)!.ready.clear().map((entry) => entry.seq)).toEqual([...group.pending.keys()]);
  }
}

/** The runtime's bindings whose two ends are durable, in one order: what a restart must rebuild. */
function durableBindings(broker: Broker): string[] {
  const durable = (destination: string): boolean => {
    const { kind, name } = destinationOf(destination);
    return kind === 'queue' ? broker.queues.get(name)?.durable === true : broker.exchanges.get(name)?.durable === true;
  };
  const out: string[] = [];
  for (const exchange of broker.exchanges.values()) {
    if (exchange.name === '' || !exchange.durable) continue;
    for (const binding of exchange.bindings()) {
      if (!durable(binding.destination)) continue;
      out.push(`${exchange.name} ${exchange.type} ${exchange.internal} ${exchange.alternateExchange ?? '-'} → ${binding.destination} ${binding.routingKey} ${Buffer.from(binding.arguments?.bytes ?? []).toString('hex')}`);
    }
  }
  return out.sort();
}

describe('live state equals replayed state', () => {
  it('after every command, and from a snapshot plus the tail', async () => {
    await fc.assert(fc.asyncProperty(fc.array(brokerCommand, { minLength: 5, maxLength: 80, size: 'large' }), checkLiveEqualsReplay), { numRuns: 150 });
  });

  it('with TTLs running out, rejections and overflow dead-lettering (queue life only)', async () => {
    const seed = announceSeed('live equals replay, queue life');
    await fc.assert(fc.asyncProperty(fc.array(queueLifeCommand, { minLength: 5, maxLength: 80, size: 'large' }), checkLiveEqualsReplay), { numRuns: 150, seed });
  });
});
