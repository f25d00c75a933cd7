/**
 * Segment release (core/segment-release.ts) with a persistent shared-subscription
 * group: a message queued in the group while its only member is offline sits in
 * an early segment while churn fills many more; the snapshot moves it to the
 * head of the log, retention removes its old segment, and the member still gets
 * it byte for byte — from the running broker (whose ready list was made before
 * the move) and after a restart.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeState } from '../../src/projections/snapshot-codec.js';
import { WorkloadDriver } from '../support/inspect-workload.js';
import { tempDirectory } from '../support/kit.js';

const logOptions = { segmentBytesMax: 4096, retentionBytes: 0 } as const;
/** No recent-message cache: a delivery reads the log at the LSN it is given, so a stale one fails. */
const driverOptions = { log: logOptions, messageCacheBytes: 0 } as const;
const group = '$share/g/cold/#';
const payload = Uint8Array.from({ length: 256 }, (_, i) => 255 - i);

async function churn(driver: WorkloadDriver, rounds: number): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await driver.amqpPublish('', 'churn', `churn ${i} ${'c'.repeat(200)}`);
    expect(await driver.getAndSettle('churn', 'ack')).toBeDefined();
  }
}

describe('releasing old segments under a shared-subscription group', () => {
  let directory: { path: string; remove(): void };
  beforeEach(() => { directory = tempDirectory('cairn-shared-release-'); });
  afterEach(() => directory.remove());

  for (const restart of [false, true]) {
    it(`moves the group's message out of its old segment; the member gets it ${restart ? 'after a restart' : 'from the running broker'}`, async () => {
      let driver = await WorkloadDriver.open(directory.path, driverOptions);
      await driver.connect('member');
      await driver.subscribe('member', group, 1);
      driver.detach('member');
      await driver.declareQueue('churn');
      await driver.connect('publisher', true);
      await driver.publish('publisher', 'cold/a', payload, 1);
      const before = driver.broker.state.groups.get(group)!.pending.first()!.lsn;
      for (let round = 0; round < 3; round++) {
        await churn(driver, 40);
        await driver.snapshot();
      }
      const after = driver.broker.state.groups.get(group)!.pending.first()!.lsn;
      expect(after).toBeGreaterThan(before);
      expect(driver.log.firstLsn, "the message's old segment is gone").toBeGreaterThan(before);
      if (restart) {
        const live = encodeState(driver.broker.state);
        await driver.close();
        driver = await WorkloadDriver.open(directory.path, driverOptions);
        expect(encodeState(driver.broker.state)).toEqual(live);
      }
      const link = await driver.connect('member');
      expect(link.received.map((p) => [...p.payload])).toEqual([[...payload]]);
      await driver.close();
    });
  }
});
