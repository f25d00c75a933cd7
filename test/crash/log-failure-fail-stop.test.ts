/**
 * A failed log stops the broker (issue 11, defect 5). Before, after an
 * fdatasync error the process stayed up, accepted connections and never
 * acknowledged anything again. Now `cairn serve` logs one fatal line naming
 * the error, closes its listeners and exits with 74; the restart (here by the
 * test, in production by the supervisor) replays the log, and every message
 * whose PUBACK the publisher received is delivered.
 *
 * The fault: CAIRN_TEST_HOOK_FAIL_FDATASYNC_AFTER=N makes every fdatasync of
 * the log after the first N fail with EIO (src/test-hooks.ts).
 */
import { connectPersistentSession } from '../support/persistent-session.js';
import { afterEach, describe, expect, it } from 'vitest';
import { failFdatasyncAfterVariable } from '../../src/test-hooks.js';
import { startBroker, tempDataDir, type BrokerProcess } from '../support/broker-process.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function broker(dir: string, env: Record<string, string> = {}): Promise<BrokerProcess> {
  const running = await startBroker(dir, ['--amqp-port', 'off'], env);
  cleanups.push(() => running.kill());
  return running;
}


function parsedLines(output: readonly string[]): Array<Record<string, unknown>> {
  return output.flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

describe('a failed fdatasync while serving', () => {
  it('exits 74 after one fatal line and closing its listeners; the restart delivers every acknowledged message', async () => {
    const data = tempDataDir('cairn-fail-stop-');
    cleanups.push(() => data.remove());
    const failing = await broker(data.dir, { [failFdatasyncAfterVariable]: '20' });

    const reader = await connectPersistentSession(failing.mqttPort, 'reader', cleanups);
    await reader.subscribeAsync('audit/#', { qos: 1 });
    await reader.endAsync();
    const publisher = await connectPersistentSession(failing.mqttPort, 'publisher', cleanups);
    const acked: string[] = [];
    const exited = failing.exited.then(() => 'exited' as const);
    for (let i = 1; i <= 200; i++) {
      const payload = `event-${i}`;
      const outcome = await Promise.race([publisher.publishAsync('audit/event', payload, { qos: 1 }).then(() => 'acked' as const, () => 'refused' as const), exited]);
      if (outcome !== 'acked') break;
      acked.push(payload);
    }
    const status = await failing.exited;
    expect(status).toEqual({ code: 74, signal: null });
    // Some publishes were acknowledged before the fault, none after it.
    expect(acked.length).toBeGreaterThan(5);
    expect(acked.length).toBeLessThan(20);

    const lines = parsedLines(failing.output);
    const fatal = lines.filter((line) => line['level'] === 60);
    expect(fatal).toHaveLength(1);
    expect(String(fatal[0]!['msg'])).toMatch(/the log failed: fdatasync failed.*EIO/);
    const fatalAt = lines.indexOf(fatal[0]!);
    const closedAt = lines.findIndex((line) => line['msg'] === 'MQTT listener closed');
    expect(closedAt).toBeGreaterThan(fatalAt);
    expect(lines.some((line) => line['msg'] === ' ready' || String(line['msg']).endsWith(' ready'))).toBe(true);

    const restarted = await broker(data.dir);
    const received: string[] = [];
    await connectPersistentSession(restarted.mqttPort, 'reader', cleanups, received);
    await expect.poll(() => received.length >= acked.length, { timeout: 5_000 }).toBe(true);
    // Every acknowledged message, in order; a message written but never acknowledged may follow (at least once).
    expect(received.slice(0, acked.length)).toEqual(acked);
  });
});
