/**
 * Transaction groups in the log (src/projections/transaction-groups.ts), case
 * by case on a MemoryLog: a committed group is applied whole; a group whose
 * commit record never reached the log (the log ends inside it, as a crash
 * leaves it) is not applied at all, start-up writes one abort record for it
 * before anything else, and every later start-up keeps it out while applying
 * what came after the abort; an empty transaction writes nothing.
 */
import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { MemoryLog } from '../../src/core/record-log.js';
import { RecordKind, type TxBody } from '../../src/projections/records.js';
import { encodeProperties } from '../../src/protocols/amqp/codec/index.js';

const persistent = encodeProperties({ deliveryMode: 2 });

async function brokerWithQueue(log: MemoryLog): Promise<Broker> {
  const broker = Broker.open({ log });
  await broker.amqp.declareQueue('q', { passive: false, durable: true, exclusive: false, autoDelete: false, arguments: {}, owner: 'test' }).durable;
  return broker;
}

async function commit(broker: Broker, bodies: readonly string[]): Promise<void> {
  await broker.amqp.commitTransaction(bodies.map((body) => ({
    kind: 'publish', message: { exchange: '', routingKey: 'q', body: Buffer.from(body), properties: persistent }, persistent: true, from: 'test',
  }))).durable;
}

function queued(broker: Broker): string[] {
  return [...broker.state.queues.get('q')!.pending.entries()].map((entry) => Buffer.from(broker.messageOf(entry).payload).toString());
}

const txOps = (log: MemoryLog): string[] => log.records.filter((r) => r.kind === RecordKind.tx).map((r) => (r.body as TxBody).op);

describe('transaction groups', () => {
  it('a committed group is begin, its records, commit, and replays whole', async () => {
    const log = new MemoryLog();
    const broker = await brokerWithQueue(log);
    await commit(broker, ['a', 'b', 'c']);
    const kinds = log.records.map((r) => r.kind);
    expect(kinds.slice(-5)).toEqual([RecordKind.tx, RecordKind.msg, RecordKind.msg, RecordKind.msg, RecordKind.tx]);
    expect(txOps(log)).toEqual(['begin', 'commit']);
    expect(queued(Broker.open({ log }))).toEqual(['a', 'b', 'c']);
  });

  it('a group the log ends inside is not applied; start-up writes its abort first, and later start-ups keep it out', async () => {
    const log = new MemoryLog();
    const broker = await brokerWithQueue(log);
    await commit(broker, ['kept']);
    await commit(broker, ['torn-1', 'torn-2', 'torn-3']);
    // The crash: the commit record and the last message never reached the disk.
    log.records.splice(log.records.length - 2, 2);
    const beginLsn = [...log.records].reverse().find((r) => r.kind === RecordKind.tx && (r.body as TxBody).op === 'begin')!.lsn;

    const restarted = Broker.open({ log });
    expect(queued(restarted)).toEqual(['kept']);
    await restarted.flush();
    const abort = log.records.at(-1)!;
    expect([abort.kind, abort.body]).toEqual([RecordKind.tx, { op: 'abort', begin: beginLsn }]);
    await commit(restarted, ['after']);

    const again = Broker.open({ log });
    expect(queued(again)).toEqual(['kept', 'after']);
    await again.flush();
    expect(txOps(log).filter((op) => op === 'abort')).toHaveLength(1);
  });

  it('a transaction that makes no record writes nothing, not even its bounds', async () => {
    const log = new MemoryLog();
    const broker = await brokerWithQueue(log);
    const before = log.records.length;
    expect(broker.amqp.commitTransaction([]).durable).toBeUndefined();
    const transient = broker.amqp.commitTransaction([{ kind: 'publish', message: { exchange: '', routingKey: 'q', body: Buffer.from('t'), properties: encodeProperties({ deliveryMode: 1 }) }, persistent: false, from: 'test' }]);
    expect(transient.durable).toBeUndefined();
    expect(log.records.length).toBe(before);
  });
});
