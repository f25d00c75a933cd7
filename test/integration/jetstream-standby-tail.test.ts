/**
 * The warm standby's state (src/log/jetstream/standby-tail.ts) is the replayed
 * state: a broker core writes a JetStream log (generated MQTT and AMQP
 * commands, snapshots with retention purging the stream's front) while a tail
 * on another connection follows it from the middle; once the tail has caught
 * up, the state it built equals the snapshot plus the stream replayed (with
 * transaction groups, as start-up replays them), and it
 * holds every frame a queued message references. The seed is printed;
 * CAIRN_TEST_SEED replays the commands.
 */
import { decode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JetStreamLog } from '../../src/log/jetstream/jetstream-log.js';
import { connectToNats } from '../../src/log/jetstream/nats-connection.js';
import { StandbyTail } from '../../src/log/jetstream/standby-tail.js';
import { createLogger } from '../../src/logger.js';
import { decodeState, encodeState, type EncodedState } from '../../src/projections/snapshot-codec.js';
import { initialState } from '../../src/projections/state.js';
import { replayGrouped } from '../../src/projections/transaction-groups.js';
import { startNatsCluster, type NatsCluster } from '../../tools/nats-cluster.js';
import { brokerCommand, BrokerHarness } from '../support/broker-harness.js';
import { announceSeed, until } from '../support/kit.js';

let cluster: NatsCluster;
beforeAll(async () => { cluster = await startNatsCluster(); }, 60_000);
afterAll(async () => { await cluster?.stop(); });

describe('warm standby tail', () => {
  it('follows a writing broker through snapshots and purges: its state is the replayed state', { timeout: 120_000 }, async () => {
    const seed = announceSeed('standby tail');
    const commandsWithSnapshots = fc.oneof({ weight: 12, arbitrary: brokerCommand }, { weight: 1, arbitrary: fc.constant({ t: 'snapshot' as const }) });
    const [before, after] = fc.sample(fc.tuple(fc.array(commandsWithSnapshots, { minLength: 150, maxLength: 150 }), fc.array(commandsWithSnapshots, { minLength: 300, maxLength: 300 })), { seed, numRuns: 1 })[0]!;
    const address = { servers: cluster.servers.split(','), stream: 'tail', tls: false };
    const log = await JetStreamLog.open({ address });
    const connection = await connectToNats(address);
    try {
      const harness = new BrokerHarness(log);
      for (const command of before) await harness.run(command);
      const tail = StandbyTail.start(connection, address.stream, createLogger({ level: 'warn' }));
      // Live before the second half, which ends with a record after any snapshot (a new durable queue): the tail
      // must apply records it reads, not only load a snapshot (a slow start could otherwise find it all snapshotted).
      await until(() => tail.readUpTo >= log.nextLsn - 1, 'the tail at the first half\'s last LSN', 30_000);
      for (const command of after) await harness.run(command);
      await harness.run({ t: 'declare', q: 'standby-tail-last', durable: true });
      await harness.broker.flush();
      await log.sync();
      await until(() => tail.readUpTo >= log.nextLsn - 1, 'the tail at the log\'s last LSN', 30_000)
        .catch((error: unknown) => { throw new Error(`${String(error)}: the log's next LSN is ${log.nextLsn}, the tail read up to ${tail.readUpTo}`); });
      const warm = await tail.stop();
      expect(warm).toBeDefined();

      const snapshot = log.loadSnapshot();
      const replayed = snapshot === undefined ? initialState() : decodeState(decode(snapshot.data) as EncodedState);
      replayGrouped(replayed, log.read({ lsn: replayed.lastLsn + 1 }));
      console.log(`standby tail: ${warm!.applied} records applied while following, state at LSN ${warm!.state.lastLsn}, snapshot ${snapshot?.lsn ?? 'none'}`);
      expect(encodeState(warm!.state)).toEqual(encodeState(replayed));
      expect(warm!.applied).toBeGreaterThan(0);
      // Every queued message's record is among the frames the tail holds.
      for (const destination of [...replayed.queues.values(), ...replayed.sessions.values()]) {
        for (const entry of destination.pending.entries()) {
          if (entry.held === undefined) expect(warm!.frames.get(entry.lsn), `LSN ${entry.lsn}`).toBeDefined();
        }
      }
    } finally {
      await log.close();
      await connection.close();
    }
  });
});
