/**
 * Fail-stop for a program that embeds Cairn (startCairn): when the log fails,
 * `stopped` rejects with the LogFailedError, one fatal line is logged, and by
 * then no listener accepts a connection (a clean_session=0 CONNECT can no
 * longer leave a half-made session, /api/overview can no longer be asked) and
 * the data directory is free for a restart in the same process.
 */
import { existsSync } from 'node:fs';
import { connect as connectTcp } from 'node:net';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../src/config.js';
import { LogFailedError } from '../../src/log/index.js';
import { lockFileName } from '../../src/log/directory-lock.js';
import { startCairn } from '../../src/server.js';
import { failFdatasyncAfterVariable, testHooksFrom } from '../../src/test-hooks.js';
import { tempDirectory } from '../support/kit.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connectTcp(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('an embedded broker whose log fails', () => {
  it('rejects `stopped` with the LogFailedError after one fatal line, its listeners closed and its data directory released', async () => {
    const directory = tempDirectory('cairn-embedded-fail-');
    cleanups.push(() => directory.remove());
    const dataDir = join(directory.path, 'data');
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const config = parseServeArgs(['--data', dataDir, '--mqtt-port', '0', '--amqp-port', '0', '--http-port', '0'], {});
    const cairn = await startCairn(config, logger, testHooksFrom({ [failFdatasyncAfterVariable]: '2' }, logger).internals);
    const stopped = cairn.stopped.then(() => undefined, (error: unknown) => error);

    const client = mqtt.connect({ host: '127.0.0.1', port: cairn.mqttPort!, clientId: 'keeper', clean: false, reconnectPeriod: 0 });
    client.on('error', () => undefined);
    cleanups.push(() => client.endAsync(true));
    // CONNECT of a persistent session and its SUBSCRIBE take the two fdatasyncs that succeed; the publish's fails.
    await new Promise<void>((resolve) => client.once('connect', () => resolve()));
    await client.subscribeAsync('audit/#', { qos: 1 });
    client.publish('audit/x', 'never acknowledged', { qos: 1 });

    const error = await stopped;
    expect(error).toBeInstanceOf(LogFailedError);
    expect((error as LogFailedError).message).toContain('EIO');
    expect(lines.filter((line) => line['level'] === 60)).toHaveLength(1);
    expect(await refused(cairn.mqttPort!)).toBe(true);
    expect(await refused(cairn.amqpPort!)).toBe(true);
    expect(await refused(cairn.httpPort!)).toBe(true);
    expect(existsSync(join(dataDir, lockFileName))).toBe(false);
    await cairn.close();

    // The restart replays the log: the persistent session and its subscription are back.
    const restarted = await startCairn(config, pino({ level: 'silent' }));
    cleanups.push(() => restarted.close());
    expect(restarted.broker.state.sessions.get('keeper')?.subscriptions.get('audit/#')).toBe(1);
  });
});
