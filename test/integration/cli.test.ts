/**
 * The `cairn` command as a user runs it: the built dist/src/cli.js in a child
 * process. Table-driven: every command's and subcommand's --help (exit 0,
 * every declared flag listed, env twins for serve, an example); usage errors
 * (exit 2, one line naming the flag, no stack); runtime failures (exit 1,
 * one line: a port in use names its listener); --print-config with where
 * each value came from (flag > environment > file > default); config-file
 * errors with their line; a closed stdout pipe ends quietly with exit 0; and
 * failed MQTT/AMQP logins logged at warn with the address and user name.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join, resolve } from 'node:path';
import amqp from 'amqplib';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/auth/users.js';
import type { CommandSpec } from '../../src/command-line/flags.js';
import { serveCommand } from '../../src/config.js';
import { inspectSubcommands } from '../../src/inspect/index.js';
import { recoverCommand } from '../../src/inspect/recover.js';
import { passwdCommand } from '../../src/command-line/passwd.js';
import { SegmentedLog } from '../../src/log/index.js';
import { RecordKind } from '../../src/projections/records.js';
import { startBroker, type BrokerProcess } from '../support/broker-process.js';
import { tempDirectory, until } from '../support/kit.js';

const cli = resolve(import.meta.dirname, '../../dist/src/cli.js');

interface Run { readonly code: number | null; readonly out: string; readonly err: string }

/** Runs the CLI to its end; `env` is added to a clean environment (no CAIRN_* from the caller). */
function run(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('CAIRN_')));
  const child = spawn(process.execPath, [cli, ...args], { env: { ...base, CAIRN_LOG_FORMAT: 'json', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  return new Promise((done) => child.once('close', (code) => done({ code, out: Buffer.concat(out).toString(), err: Buffer.concat(err).toString() })));
}

const temp = tempDirectory('cairn-cli-');
afterAll(() => temp.remove());

describe.concurrent('--help on every command and subcommand', () => {
  const commands: Array<[string[], CommandSpec]> = [
    [['serve'], serveCommand],
    ...Object.entries(inspectSubcommands).map(([name, { spec }]): [string[], CommandSpec] => [['inspect', name], spec]),
    [['recover'], recoverCommand],
    [['passwd'], passwdCommand],
  ];
  it.each(commands)('cairn %j --help lists every flag and an example', async (words, spec) => {
    for (const help of words[0] === 'serve' ? ['--help', '-h'] : ['--help']) {
      const r = await run([...words, help]);
      expect(r.code).toBe(0);
      expect(r.err).toBe('');
      for (const flag of spec.flags) expect(r.out).toContain(`--${flag.name}`);
      for (const flag of spec.flags) if (flag.env !== undefined) expect(r.out).toContain(`env ${flag.env}`);
      expect(r.out).toContain(`usage: cairn ${spec.name}`);
      expect(r.out).toMatch(/examples?:\n {2}cairn /);
    }
  });

  it('serve --help shows defaults with their units', async () => {
    const r = await run(['serve', '--help']);
    expect(r.out).toMatch(/--segment-bytes SIZE[^\n]*\n\s+\(default 64MiB; env CAIRN_SEGMENT_BYTES\)/);
    expect(r.out).toMatch(/--log-level trace\|debug\|info\|warn\|error\|fatal\|silent/);
  });

  it.each([[['--help'], /usage:\n {2}cairn serve/], [['help'], /usage:\n {2}cairn serve/], [['inspect', '--help'], /subcommands:\n {2}segments/]])('cairn %j lists the (sub)commands', async (args, listing) => {
    const r = await run(args);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(listing);
  });
});

describe.concurrent('usage errors: exit 2, one line naming the flag', () => {
  const cases: Array<[string[], Record<string, string>, RegExp]> = [
    [['serve', '--data', '--mqtt-port', '0'], {}, /^cairn serve: --data needs a value \(DIR\), but the next argument is the flag --mqtt-port/],
    [['serve', '--bogus'], {}, /^cairn serve: unknown flag --bogus/],
    [['serve', 'now'], {}, /^cairn serve: unexpected argument 'now'/],
    [['serve', '--segment-bytes', '64XB'], {}, /^cairn serve: --segment-bytes '64XB' is not a size/],
    [['serve', '--segment-bytes', '1KiB'], {}, /^cairn serve: --segment-bytes '1KiB' is too small: the least is 4096 bytes/],
    [['serve', '--retention-age', '30'], {}, /^cairn serve: --retention-age '30' is not a duration: give a number and a unit \(500ms, 30s/],
    [['serve', '--mqtt-port', '70000'], {}, /^cairn serve: --mqtt-port '70000' is not a port/],
    [['serve', '--log-level', 'loud'], {}, /^cairn serve: --log-level 'loud' is not one of trace, debug, info, warn, error, fatal, silent$/],
    [['serve'], { CAIRN_LOG_LEVEL: 'verbose' }, /^cairn serve: CAIRN_LOG_LEVEL \(--log-level\) 'verbose' is not one of trace, debug, info, warn, error, fatal, silent$/],
    [['serve', '--ingest', 'nocolon'], {}, /^cairn serve: --ingest 'nocolon' is not a list of routes/],
    [['serve', '--print-config=yes'], {}, /^cairn serve: --print-config takes no value$/],
    [['serve', '--mqtts-port', '8883'], {}, /^cairn serve: --mqtts-port needs --tls-cert and --tls-key$/],
    [['serve', '--tls-client-cert', 'maybe'], {}, /^cairn serve: --tls-client-cert 'maybe' is not one of none, optional, required$/],
    [['inspect', 'records', '--data'], {}, /^cairn inspect records: --data needs a value/],
    [['inspect', 'records', '--limit', '0', '--data', '.'], {}, /^cairn inspect records: --limit '0' must be a positive integer$/],
    [['inspect', 'state', '--data', '.', '--at', 'noon'], {}, /^cairn inspect state: --at 'noon' is not a time/],
    [['inspect', 'trace', '--json', '--data', '--lsn', '3'], {}, /^cairn inspect trace: --data needs a value/],
    [['inspect', 'stats'], {}, /^cairn inspect stats: --data is required/],
    [['inspect', 'nope'], {}, /^cairn inspect: unknown subcommand 'nope'/],
    [['recover', '--from', '.'], {}, /^cairn recover: --to is required/],
    [['recover', '--from', '.', '--to', 'x', '--lsn', 'last'], {}, /^cairn recover: --lsn 'last' is not an LSN/],
    [['passwd', '--users', 'u.json'], {}, /^cairn passwd: --user is required/],
    [['frobnicate'], {}, /^cairn: unknown command 'frobnicate'/],
  ];
  it.each(cases)('cairn %j %j', async (args, env, message) => {
    const r = await run(args, env);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err.trimEnd().split('\n')).toHaveLength(1);
    expect(r.err.trimEnd()).toMatch(message);
    expect(r.err).not.toMatch(/\n\s+at /);
  });
});

describe('--config and --print-config', () => {
  it('prints the effective configuration with where each value came from, and exits 0', async () => {
    const file = join(temp.path, 'cairn.yaml');
    fs.writeFileSync(file, '# test\nmqtt-port: 1111\namqp-port: 2222\nhttp-port: 3333\nsegment-bytes: 128MiB\n');
    const r = await run(['serve', '--config', file, '--http-port', '5555', '--print-config'], { CAIRN_AMQP_PORT: '4444' });
    expect(r.code).toBe(0);
    const line = (key: string): string => r.out.split('\n').find((l) => l.startsWith(`${key}:`)) ?? '';
    expect(line('mqtt-port')).toMatch(new RegExp(`^mqtt-port: 1111 +# file ${file}:2$`));
    expect(line('amqp-port')).toMatch(/^amqp-port: 4444 +# environment CAIRN_AMQP_PORT$/);
    expect(line('http-port')).toMatch(/^http-port: 5555 +# flag$/);
    expect(line('segment-bytes')).toMatch(new RegExp(`^segment-bytes: 128MiB +# file ${file}:5$`));
    expect(line('data')).toMatch(/^data: \.\/data +# default$/);
    expect(r.out).toMatch(/^# users: +# unset$/m);
    // What it prints is a config file that reads back to the same values.
    const echoed = join(temp.path, 'echoed.yaml');
    fs.writeFileSync(echoed, r.out);
    const again = await run(['serve', '--config', echoed, '--print-config']);
    expect(again.code).toBe(0);
    expect(again.out).toMatch(/^amqp-port: 4444 /m);
  });

  it('an unknown key is exit 2 naming the key and its line', async () => {
    const file = join(temp.path, 'typo.yaml');
    fs.writeFileSync(file, 'data: ./x\n\n# ports\nmqtt-prot: 1883\n');
    const r = await run(['serve', '--config', file]);
    expect(r.code).toBe(2);
    expect(r.err).toBe(`cairn serve: ${file}:4: unknown key 'mqtt-prot' (the keys are the flags of cairn serve, without '--': see cairn serve --help)\n`);
  });
});

describe('runtime failures: exit 1, one line', () => {
  let occupied: Server;
  let port: number;
  beforeAll(async () => {
    occupied = createServer();
    await new Promise<void>((done) => occupied.listen(0, '127.0.0.1', () => done()));
    port = (occupied.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((done) => occupied.close(() => done())));

  it.each([['mqtt', 'MQTT'], ['amqp', 'AMQP'], ['http', 'HTTP'], ['ws', 'MQTT WebSocket']])('a %s port in use names the listener', async (protocol, name) => {
    const ports: Record<string, string> = { mqtt: '0', amqp: '0', http: '0', ws: 'off', [protocol]: String(port) };
    const listenerFlags = Object.entries(ports).flatMap(([flag, value]) => [`--${flag}-port`, value]);
    const r = await run(['serve', '--data', join(temp.path, `busy-${protocol}`), ...listenerFlags, '--log-level', 'warn']);
    expect(r.code).toBe(1);
    expect(r.err).toBe(`cairn serve: ${name} listener: 127.0.0.1:${port} already in use\n`);
  });
});

describe('a closed stdout pipe', () => {
  it('inspect records | head: exit 0, nothing on stderr', async () => {
    const dir = join(temp.path, 'many-records');
    const log = await SegmentedLog.open({ dir });
    for (let batch = 0; batch < 20; batch++) {
      await log.append(Array.from({ length: 1000 }, (_, i) => ({ kind: RecordKind.doc, timestamp: Date.now(), body: { col: 'c', id: batch * 1000 + i, doc: { n: i, text: 'x'.repeat(60) } } })));
    }
    await log.close();
    const child = spawn(process.execPath, [cli, 'inspect', 'records', '--data', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    const err: Buffer[] = [];
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    const closed = new Promise<number | null>((done) => child.once('close', (code) => done(code)));
    // Read the first chunk, then close our end, as `head` does once it has its lines.
    await new Promise<void>((done) => child.stdout.once('data', () => { child.stdout.destroy(); done(); }));
    expect(await closed).toBe(0);
    expect(Buffer.concat(err).toString()).toBe('');
  });
});

describe('failed logins are logged at warn with the address and the user name', () => {
  let broker: BrokerProcess;
  const lines: string[] = [];
  beforeAll(async () => {
    const users = join(temp.path, 'users.json');
    fs.writeFileSync(users, JSON.stringify({ users: [{ username: 'alice', password: await hashPassword('s3cret') }] }));
    broker = await startBroker(join(temp.path, 'login-data'), ['--users', users]);
    broker.child.stdout!.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter((line) => line !== '')));
  });
  afterAll(() => broker.stop());

  const warned = (message: string): Record<string, unknown> | undefined =>
    lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((entry) => entry['msg'] === message && entry['level'] === 40);

  it('MQTT CONNACK 4: MQTT.js sees "Bad username or password"; the log names user and address', async () => {
    const client = mqtt.connect(`mqtt://127.0.0.1:${broker.mqttPort}`, { username: 'alice', password: 'wrong', reconnectPeriod: 0, clientId: 'intruder' });
    const error = await new Promise<Error & { code?: number }>((done) => client.once('error', done));
    client.end(true);
    expect(error.code).toBe(4);
    await until(() => warned('MQTT login refused') !== undefined, 'the MQTT warn line');
    expect(warned('MQTT login refused')).toMatchObject({ user: 'alice', clientId: 'intruder', outcome: 'bad-credentials', remote: expect.stringMatching(/^127\.0\.0\.1:\d+$/) });
  });

  it('AMQP 403: amqplib sees ACCESS_REFUSED pointing to the log, which shows user and address', async () => {
    const error = await amqp.connect(`amqp://mallory:wrong@127.0.0.1:${broker.amqpPort}`).then(() => undefined, (e: unknown) => e as Error);
    expect(error?.message).toMatch(/ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN\. For details see the broker logfile\./);
    await until(() => warned('AMQP login refused') !== undefined, 'the AMQP warn line');
    expect(warned('AMQP login refused')).toMatchObject({ user: 'mallory', outcome: 'bad-credentials', remote: expect.stringMatching(/^127\.0\.0\.1:\d+$/) });
  });
});
