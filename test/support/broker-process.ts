/** Crash tests run `cairn serve` as a child process: the same launcher the benchmarks use. */
import { afterEach } from 'vitest';
import { startCairnProcess, type CairnProcess } from '../../tools/cairn-process.js';

export { runCairnCommand, startCairnProcess as startBroker, tempDataDir, type CairnProcess as BrokerProcess } from '../../tools/cairn-process.js';

/**
 * `cairn serve` for an MQTT crash test: no AMQP listener, a snapshot every 5 records (so state
 * also passes through snapshots); `cleanups` gets the kill for a process still running at the end.
 */
export async function startMqttBroker(dir: string, cleanups: Array<() => Promise<void> | void>): Promise<CairnProcess> {
  const running = await startCairnProcess(dir, ['--amqp-port', 'off', '--snapshot-every', '5']);
  cleanups.push(() => (running.child.exitCode === null ? running.kill() : undefined));
  return running;
}

/** Registers an afterEach that runs, last first, the clean-ups the test pushed (clients, brokers, directories). */
export function useCleanups(): Array<() => Promise<void> | void> {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return cleanups;
}
