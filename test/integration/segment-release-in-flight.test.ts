/**
 * Segment release (core/segment-release.ts) while the moved message is out
 * with a consumer: the projection's entry is relinked to the copy and the old
 * segment removed, so when the message comes back (an AMQP requeue, an MQTT
 * session that left with it unacknowledged) it must be read at its new LSN,
 * not at the one its delivery was made with. No message cache, so a stale LSN
 * is read from the log and fails.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WorkloadDriver } from '../support/inspect-workload.js';
import { tempDirectory } from '../support/kit.js';

const driverOptions = { log: { segmentBytesMax: 4096, retentionBytes: 0 }, messageCacheBytes: 0 } as const;
const body = 'out-with-a-consumer:' + 'k'.repeat(300);

async function churnAndRelease(driver: WorkloadDriver): Promise<void> {
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 40; i++) {
      await driver.amqpPublish('', 'churn', `churn ${i} ${'c'.repeat(200)}`);
      expect(await driver.getAndSettle('churn', 'ack')).toBeDefined();
    }
    await driver.snapshot();
  }
}

describe('releasing the segment of a message that is out with a consumer', () => {
  let directory: { path: string; remove(): void };
  beforeEach(() => { directory = tempDirectory('cairn-release-in-flight-'); });
  afterEach(() => directory.remove());

  it('an AMQP delivery requeued after the move is delivered again from the copy', async () => {
    const driver = await WorkloadDriver.open(directory.path, driverOptions);
    await driver.declareQueue('kept');
    await driver.declareQueue('churn');
    await driver.amqpPublish('', 'kept', body);
    const before = driver.broker.state.queues.get('kept')!.pending.first()!.lsn;
    const { delivery } = driver.broker.amqp.get('kept', { noAck: false, owner: 'o' });
    expect(delivery).toBeDefined();
    await churnAndRelease(driver);
    expect(driver.broker.state.queues.get('kept')!.pending.first()!.lsn).toBeGreaterThan(before);
    expect(driver.log.firstLsn, "the message's old segment is gone").toBeGreaterThan(before);
    driver.broker.amqp.settle(delivery!, 'requeue');
    await driver.broker.flush();
    const again = await driver.getAndSettle('kept', 'ack');
    expect(new TextDecoder().decode(again!.message.body)).toBe(body);
    await driver.close();
  });

  it('an MQTT session that left with the message unacknowledged gets it from the copy when it comes back', async () => {
    const driver = await WorkloadDriver.open(directory.path, driverOptions);
    await driver.declareQueue('churn');
    const first = await driver.connect('cold');
    await driver.subscribe('cold', 'cold/#', 1);
    await driver.connect('publisher', true);
    await driver.publish('publisher', 'cold/a', body, 1);
    expect(first.received.map((p) => new TextDecoder().decode(p.payload))).toEqual([body]);
    const before = driver.broker.state.sessions.get('cold')!.pending.first()!.lsn;
    driver.detach('cold');
    await churnAndRelease(driver);
    expect(driver.broker.state.sessions.get('cold')!.pending.first()!.lsn).toBeGreaterThan(before);
    expect(driver.log.firstLsn, "the message's old segment is gone").toBeGreaterThan(before);
    const back = await driver.connect('cold');
    expect(back.received.map((p) => new TextDecoder().decode(p.payload))).toEqual([body]);
    await driver.close();
  });
});
