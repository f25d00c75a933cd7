/**
 * One data directory, one broker (issue 11, defect 3), with real processes:
 * a second `cairn serve` on a live directory refuses with one line naming the
 * first broker's pid, and so does `cairn recover --to` onto it; the read-only
 * `inspect` commands still work on it; after kill -9 of the holder a new
 * broker takes the directory over and finds every acknowledged message.
 */
import { connectPersistentSession } from '../support/persistent-session.js';
import { afterEach, describe, expect, it } from 'vitest';
import { runCairnCommand, startBroker, tempDataDir, type BrokerProcess } from '../support/broker-process.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function broker(dir: string): Promise<BrokerProcess> {
  const running = await startBroker(dir, ['--amqp-port', 'off', '--http-port', 'off']);
  cleanups.push(() => running.kill());
  return running;
}


function stderrLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.trim() !== '');
}

describe('the data directory lock across processes', () => {
  it('refuses a second serve and a recover --to naming the holder, lets inspect read, and is taken over after kill -9', async () => {
    const data = tempDataDir('cairn-lock-');
    const copy = tempDataDir('cairn-lock-copy-');
    cleanups.push(() => data.remove(), () => copy.remove());
    const first = await broker(data.dir);
    const holderPid = first.child.pid!;

    const reader = await connectPersistentSession(first.mqttPort, 'reader', cleanups);
    await reader.subscribeAsync('audit/#', { qos: 1 });
    await reader.endAsync();
    const publisher = await connectPersistentSession(first.mqttPort, 'publisher', cleanups);
    for (let i = 1; i <= 5; i++) await publisher.publishAsync('audit/event', `acked-${i}`, { qos: 1 });

    const second = await runCairnCommand(['serve', '--data', data.dir, '--mqtt-port', '0', '--amqp-port', 'off', '--http-port', 'off']);
    expect(second.code).toBe(1);
    expect(second.stdout).not.toContain(' ready');
    expect(stderrLines(second.stderr)).toEqual([expect.stringContaining(`is in use by pid ${holderPid}`)]);

    const verify = await runCairnCommand(['inspect', 'verify', '--data', data.dir]);
    expect(verify.code).toBe(0);
    const recovered = await runCairnCommand(['recover', '--from', data.dir, '--to', `${copy.dir}/at-2`, '--lsn', '2']);
    expect(recovered.code).toBe(0);
    const onto = await runCairnCommand(['recover', '--from', `${copy.dir}/at-2`, '--to', data.dir, '--lsn', '2']);
    expect(onto.code).toBe(1);
    expect(stderrLines(onto.stderr)).toEqual([expect.stringContaining(`is in use by pid ${holderPid}`)]);

    await first.kill();
    const next = await broker(data.dir);
    expect(next.output.some((line) => line.includes('took over the data directory lock') && line.includes(`"pid":${holderPid}`))).toBe(true);
    const received: string[] = [];
    await connectPersistentSession(next.mqttPort, 'reader', cleanups, received);
    await expect.poll(() => received.length).toBe(5);
    expect(received).toEqual(['acked-1', 'acked-2', 'acked-3', 'acked-4', 'acked-5']);
  });
});
