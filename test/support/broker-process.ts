/** Crash tests run `cairn serve` as a child process: the same launcher the benchmarks use. */
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
