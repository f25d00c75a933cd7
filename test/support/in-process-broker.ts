/**
 * A broker in the test's own process on a real data directory, with an
 * injected clock and an MQTT listener on a free port: for MQTT 5 tests in
 * which time (message and session expiry) is a fact the test sets.
 */
import type { MqttClient } from 'mqtt';
import { Broker } from '../../src/core/broker.js';
import { SegmentedLog } from '../../src/log/index.js';
import { silentLogger } from '../../src/logger.js';
import { startMqttServer, type MqttServer } from '../../src/protocols/mqtt/server.js';

export interface InProcessBroker {
  readonly log: SegmentedLog;
  readonly broker: Broker;
  readonly server: MqttServer;
}

export async function startInProcessBroker(dir: string, clock: () => number): Promise<InProcessBroker> {
  const log = await SegmentedLog.open({ dir, logger: silentLogger() });
  const broker = Broker.open({ log, logger: silentLogger(), clock });
  broker.mqtt.startSessionExpiry();
  const server = await startMqttServer({ core: broker.mqtt, host: '127.0.0.1', port: 0, logger: silentLogger() });
  return { log, broker, server };
}

/** Drops the clients, closes the listener, and closes the log once everything is durable. */
export async function stopInProcessBroker(running: InProcessBroker, clients: MqttClient[]): Promise<void> {
  for (const client of clients.splice(0)) client.end(true);
  await running.server.close();
  await running.broker.flush();
  await running.log.close().catch(() => undefined);
}
