/**
 * Forensics after kill -9: the broker is SIGKILLed under load, then — before
 * any restart repairs the tail — `cairn inspect verify` must call the data
 * directory healthy or recoverable (a torn tail), never damaged, and
 * `cairn inspect trace` must explain the fate of every PUBACKed message: still
 * pending for the offline persistent subscriber, pending or acked for the
 * connected one.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import mqtt from 'mqtt';
import { afterEach, describe, expect, it } from 'vitest';
import { startBroker, tempDataDir } from '../support/broker-process.js';
import { announceSeed, until } from '../support/kit.js';

const cli = resolve(import.meta.dirname, '../../dist/src/cli.js');
const cleanups: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
});
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function cairn(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

async function connect(port: number, clientId: string, clean: boolean): Promise<mqtt.MqttClient> {
  const client = await mqtt.connectAsync({ host: '127.0.0.1', port, clientId, clean, reconnectPeriod: 0 });
  client.on('error', () => undefined);
  cleanups.push(() => Promise.race([client.endAsync(true), sleep(300)]));
  return client;
}

describe('inspect after kill -9', () => {
  it('verify is never "damaged"; trace explains every PUBACKed message', async () => {
    const seed = announceSeed('inspect crash') % 100_000;
    const data = tempDataDir('cairn-inspect-crash-');
    cleanups.push(() => data.remove());
    // Snapshots every few hundred records: inspect must explain a directory that holds them too.
    const running = await startBroker(data.dir, ['--amqp-port', 'off', '--http-port', 'off', '--snapshot-every', '200']);
    cleanups.push(() => (running.child.exitCode === null ? running.kill() : undefined));

    const offline = await connect(running.mqttPort, 'forensic-sub', false);
    await offline.subscribeAsync('load/#', { qos: 1 });
    await offline.endAsync();
    const online = await connect(running.mqttPort, 'acker', false);
    await online.subscribeAsync('load/#', { qos: 1 });

    const publisher = await connect(running.mqttPort, 'load-pub', true);
    const pubacked: string[] = [];
    let stop = false;
    const publishing = Promise.all([0, 1, 2, 3].map(async (lane) => {
      for (let i = 0; !stop && i < 700; i++) {
        const payload = `lane${lane}-m${i}`;
        try {
          await publisher.publishAsync(`load/${lane}`, payload, { qos: 1 });
          pubacked.push(payload);
        } catch {
          return;
        }
      }
    }));
    // Some publishes acknowledged however slow the machine (150 ms alone saw none at a high load), then a while.
    await until(() => pubacked.length >= 20, '20 publishes acknowledged', 30_000);
    await sleep(seed % 350);
    stop = true;
    await running.kill();
    publisher.end(true);
    await Promise.race([publishing, sleep(1000)]);
    expect(pubacked.length).toBeGreaterThan(0);

    const verify = cairn('inspect', 'verify', '--data', data.dir, '--json');
    const report = JSON.parse(verify.stdout) as { verdict: string };
    expect(['healthy', 'recoverable'], verify.stdout).toContain(report.verdict);
    expect(verify.status).toBe(report.verdict === 'healthy' ? 0 : 1);

    const records = cairn('inspect', 'records', '--data', data.dir, '--kind', 'msg', '--json');
    expect(records.status, records.stderr).toBe(0);
    const payloadOf = new Map<number, string>();
    for (const line of records.stdout.trim().split('\n')) {
      const r = JSON.parse(line) as { lsn: number; body: { p: { utf8?: string } } };
      payloadOf.set(r.lsn, r.body.p.utf8 ?? '');
    }
    const trace = cairn('inspect', 'trace', '--data', data.dir, '--topic', 'load/#', '--json', '--limit', '100000');
    expect(trace.status, trace.stderr).toBe(0);
    const fate = new Map<string, Map<string, string>>();
    for (const line of trace.stdout.trim().split('\n')) {
      const t = JSON.parse(line) as { lsn: number; destinations: Array<{ destination: string; status: string }> };
      fate.set(payloadOf.get(t.lsn)!, new Map(t.destinations.map((d) => [d.destination, d.status])));
    }
    for (const payload of pubacked) {
      const destinations = fate.get(payload);
      expect(destinations, `no trace for PUBACKed ${payload}`).toBeDefined();
      expect(destinations!.get('session forensic-sub'), payload).toBe('pending');
      expect(['pending', 'acked'], payload).toContain(destinations!.get('session acker'));
    }
  });
});
