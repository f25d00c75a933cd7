/**
 * TLS on every listener, with certificates made by openssl for this test:
 * MQTT.js over mqtts://, amqplib over amqps://, an HTTPS request, and
 * mosquitto_pub/mosquitto_sub with --cafile; TLS 1.1 refused; client
 * certificates required (none or an unknown CA's: handshake refused) and
 * optional; the certificate's CN as the user name with --users; the
 * certificate files re-read on reload without dropping a connection, and the
 * renewed certificate presented by MQTT over TLS and by HTTPS (whose sockets
 * are on the HTTP listener's socket thread).
 */
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync as readPem } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { connect as tlsConnect, type PeerCertificate } from 'node:tls';
import { promisify } from 'node:util';
import amqp from 'amqplib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tempDirectory, until } from '../support/kit.js';
import { makeTestCertificates, type TestCertificates } from '../support/certificates.js';
import { collectMessages, startEdgeBroker, writeUsersFile, type EdgeBroker } from '../support/edge-broker.js';

const run = promisify(execFile);
let certificates: TestCertificates;
let certificateDir: { path: string; remove(): void };
let broker: EdgeBroker | undefined;

beforeAll(() => {
  certificateDir = tempDirectory('cairn-certs-');
  certificates = makeTestCertificates(certificateDir.path);
});
afterAll(() => certificateDir.remove());
afterEach(async () => {
  await broker?.close();
  broker = undefined;
});

function tlsFlags(extra: readonly string[] = []): string[] {
  return ['--tls-cert', certificates.server.cert, '--tls-key', certificates.server.key, '--mqtts-port', '0', '--amqps-port', '0', '--https-port', '0', ...extra];
}

async function start(extra: readonly string[] = [], prepare?: (dir: string) => Promise<string[]>): Promise<EdgeBroker> {
  broker = await startEdgeBroker(async (dir) => [...tlsFlags(extra), ...(prepare ? await prepare(dir) : [])]);
  return broker;
}

function mqttsUrl(): string {
  return `mqtts://127.0.0.1:${broker!.running.mqttsPort!}`;
}

/** The certificate a fresh TLS handshake with the broker's MQTT over TLS listener presents. */
function serverCertificate(port: number, options: { maxVersion?: 'TLSv1.1' | 'TLSv1.3' } = {}): Promise<PeerCertificate> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: certificates.ca, ...(options.maxVersion ? { maxVersion: options.maxVersion, minVersion: 'TLSv1' } : {}) }, () => {
      resolve(socket.getPeerCertificate());
      socket.end();
    });
    socket.once('error', reject);
  });
}

/** The status of GET /api/overview over HTTPS, optionally with a client certificate. */
function httpsStatus(port: number, client: { key?: Buffer; cert?: Buffer } = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpsGet({ host: '127.0.0.1', port, path: '/api/overview', ca: certificates.ca, agent: false, ...client }, (response) => {
      response.resume();
      response.once('end', () => resolve(response.statusCode ?? 0));
    });
    request.once('error', reject);
  });
}

function requireMosquittoClients(): void {
  for (const command of ['mosquitto_pub', 'mosquitto_sub']) {
    try {
      execFileSync('which', [command], { stdio: 'ignore' });
    } catch {
      throw new Error(`${command} is not installed; the TLS test drives it: apt-get install mosquitto-clients`);
    }
  }
}

describe('TLS listeners (server certificate only)', () => {
  it('MQTT.js over mqtts:// with the CA: publish and subscribe, QoS 1', async () => {
    await start();
    const { client: subscriber } = await broker!.connect(mqttsUrl(), { clientId: 'tls-sub', ca: certificates.ca });
    const lines = collectMessages(subscriber);
    await subscriber.subscribeAsync('tls/#', { qos: 1 });
    const { client: publisher } = await broker!.connect(mqttsUrl(), { clientId: 'tls-pub', ca: certificates.ca });
    await publisher.publishAsync('tls/hello', 'over TLS', { qos: 1 });
    await until(() => lines.length === 1, 'the subscriber received the message over TLS');
    expect(lines).toEqual(['tls/hello over TLS']);
  });

  it('amqplib over amqps:// with the CA: declare, publish, get', async () => {
    await start();
    const connection = await amqp.connect(`amqps://127.0.0.1:${broker!.running.amqpsPort!}`, { ca: [certificates.ca] });
    try {
      const channel = await connection.createConfirmChannel();
      await channel.assertQueue('tls-q', { durable: true });
      channel.sendToQueue('tls-q', Buffer.from('amqps body'), { persistent: true });
      await channel.waitForConfirms();
      const message = await channel.get('tls-q', { noAck: true });
      expect(message && message.content.toString()).toBe('amqps body');
    } finally {
      await connection.close();
    }
  });

  it('HTTPS answers the API with the CA; the overview lists the TLS listeners by RabbitMQ\'s names', async () => {
    await start();
    const body = await new Promise<string>((resolve, reject) => {
      httpsGet({ host: '127.0.0.1', port: broker!.running.httpsPort!, path: '/api/overview', ca: certificates.ca }, (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => { text += chunk.toString(); });
        response.on('end', () => resolve(text));
      }).once('error', reject);
    });
    const overview = JSON.parse(body) as { listeners: Array<{ protocol: string; port: number }> };
    const running = broker!.running;
    expect(overview.listeners).toEqual(expect.arrayContaining([
      expect.objectContaining({ protocol: 'https', port: running.httpsPort }),
      expect.objectContaining({ protocol: 'mqtt/ssl', port: running.mqttsPort }),
      expect.objectContaining({ protocol: 'amqp/ssl', port: running.amqpsPort }),
    ]));
  });

  it('mosquitto_sub and mosquitto_pub with --cafile', async () => {
    requireMosquittoClients();
    await start();
    const port = String(broker!.running.mqttsPort!);
    const common = ['-h', '127.0.0.1', '-p', port, '--cafile', certificates.caFile];
    const subscriber = run('mosquitto_sub', [...common, '-t', 'mosq/tls', '-q', '1', '-C', '1', '-W', '20', '-i', 'mosq-sub'], { timeout: 30_000 });
    // The subscription exists once the session does: wait for it on the HTTP API rather than sleep.
    await until(() => broker!.running.broker.sessions.get('mosq-sub')?.state.subscriptions.size === 1, 'mosquitto_sub subscribed');
    await run('mosquitto_pub', [...common, '-t', 'mosq/tls', '-m', 'from mosquitto_pub', '-q', '1'], { timeout: 30_000 });
    const { stdout } = await subscriber;
    expect(stdout.trim()).toBe('from mosquitto_pub');
  });

  it('refuses TLS 1.1 and offers TLS 1.3', async () => {
    await start();
    await expect(serverCertificate(broker!.running.mqttsPort!, { maxVersion: 'TLSv1.1' })).rejects.toThrow();
    await expect(serverCertificate(broker!.running.mqttsPort!, { maxVersion: 'TLSv1.3' })).resolves.toBeDefined();
  });
});

describe('client certificates', () => {
  it('required: no certificate, or one from an unknown CA, fails the handshake; a good one connects', async () => {
    await start(['--tls-ca', certificates.caFile, '--tls-client-cert', 'required']);
    await expect(broker!.connect(mqttsUrl(), { clientId: 'no-cert', ca: certificates.ca })).rejects.toThrow();
    const stranger = { key: readPem(certificates.stranger.key), cert: readPem(certificates.stranger.cert) };
    await expect(broker!.connect(mqttsUrl(), { clientId: 'stranger', ca: certificates.ca, ...stranger })).rejects.toThrow();
    const good = certificates.client('device-1');
    const { connack } = await broker!.connect(mqttsUrl(), { clientId: 'good', ca: certificates.ca, key: readPem(good.key), cert: readPem(good.cert) });
    expect(connack.returnCode).toBe(0);
  });

  it('optional: no certificate connects, an unknown CA\'s is cut off', async () => {
    await start(['--tls-ca', certificates.caFile, '--tls-client-cert', 'optional']);
    const { connack } = await broker!.connect(mqttsUrl(), { clientId: 'no-cert', ca: certificates.ca });
    expect(connack.returnCode).toBe(0);
    const stranger = { key: readPem(certificates.stranger.key), cert: readPem(certificates.stranger.cert) };
    await expect(broker!.connect(mqttsUrl(), { clientId: 'stranger', ca: certificates.ca, ...stranger })).rejects.toThrow();
    // The same rule on HTTPS, whose sockets are on the HTTP listener's socket thread.
    const httpsPort = broker!.running.httpsPort!;
    expect(await httpsStatus(httpsPort)).toBe(200);
    await expect(httpsStatus(httpsPort, stranger)).rejects.toThrow();
  });

  it('identity as user name: the CN of a user in --users logs in without a password; another CN gets CONNACK 5', async () => {
    await start(['--tls-ca', certificates.caFile, '--tls-client-cert', 'required', '--tls-identity-as-username', 'true'], async (dir) => {
      const users = await writeUsersFile(dir, ['sensor-17', { username: 'amqp-only', mqtt: false }], 'unused-password');
      return ['--users', users];
    });
    const sensor = certificates.client('sensor-17');
    const { connack } = await broker!.connect(mqttsUrl(), { clientId: 'c1', ca: certificates.ca, key: readPem(sensor.key), cert: readPem(sensor.cert), username: 'someone-else', password: 'wrong' });
    expect(connack.returnCode).toBe(0);
    for (const name of ['nobody', 'amqp-only']) {
      const pair = certificates.client(name);
      await expect(broker!.connect(mqttsUrl(), { clientId: `c-${name}`, ca: certificates.ca, key: readPem(pair.key), cert: readPem(pair.cert) })).rejects.toMatchObject({ code: 5 });
    }
    // The plain listener has no certificate: a password is still needed there.
    await expect(broker!.connect(`mqtt://127.0.0.1:${broker!.running.mqttPort!}`, { clientId: 'plain' })).rejects.toMatchObject({ code: 5 });
  });
});

describe('reload (SIGHUP)', () => {
  it('re-reads the certificate files: new handshakes get the new certificate, an open connection stays up', async () => {
    const live = tempDirectory('cairn-live-certs-');
    try {
      copyFileSync(certificates.server.cert, `${live.path}/cert.pem`);
      copyFileSync(certificates.server.key, `${live.path}/key.pem`);
      broker = await startEdgeBroker(() => ['--tls-cert', `${live.path}/cert.pem`, '--tls-key', `${live.path}/key.pem`, '--mqtts-port', '0', '--https-port', '0']);
      const port = broker.running.mqttsPort!;
      // HTTPS is served by the HTTP listener's socket thread: the reload reaches it as a message.
      const httpsPort = broker.running.httpsPort!;
      expect((await serverCertificate(port)).subject.CN).toBe('cairn-test-server');
      expect((await serverCertificate(httpsPort)).subject.CN).toBe('cairn-test-server');
      const { client } = await broker.connect(mqttsUrl(), { clientId: 'stays', ca: certificates.ca });
      const lines = collectMessages(client);
      await client.subscribeAsync('reload/#', { qos: 1 });

      copyFileSync(certificates.server2.cert, `${live.path}/cert.pem`);
      copyFileSync(certificates.server2.key, `${live.path}/key.pem`);
      expect(await broker.running.reload()).toEqual({ failures: [] });
      expect((await serverCertificate(port)).subject.CN).toBe('cairn-test-server-renewed');
      // The new context is posted to the socket thread; a handshake after it was applied gets the new certificate.
      await until(async () => (await serverCertificate(httpsPort)).subject.CN === 'cairn-test-server-renewed', 'the HTTPS listener presents the renewed certificate');

      // A key that does not match the certificate: refused, the renewed pair stays in force.
      copyFileSync(certificates.server.key, `${live.path}/key.pem`);
      const { failures } = await broker.running.reload();
      expect(failures).toHaveLength(1);
      expect(failures[0]).toMatch(/not a usable certificate and key/);
      expect((await serverCertificate(port)).subject.CN).toBe('cairn-test-server-renewed');
      expect((await serverCertificate(httpsPort)).subject.CN).toBe('cairn-test-server-renewed');

      await client.publishAsync('reload/after', 'still here', { qos: 1 });
      await until(() => lines.length === 1, 'the connection opened before the reloads still delivers');
      expect(client.connected).toBe(true);
    } finally {
      live.remove();
    }
  });
});

describe('configuration', () => {
  it('refuses inconsistent TLS flags with a message naming them', async () => {
    const { parseServeArgs } = await import('../../src/config.js');
    expect(() => parseServeArgs(['--tls-cert', 'c.pem'], {})).toThrow(/--tls-cert and --tls-key go together/);
    expect(() => parseServeArgs(['--mqtts-port', '8883'], {})).toThrow(/--mqtts-port needs --tls-cert and --tls-key/);
    expect(() => parseServeArgs(['--tls-cert', 'c', '--tls-key', 'k', '--tls-client-cert', 'required'], {})).toThrow(/needs --tls-ca/);
    expect(() => parseServeArgs(['--tls-cert', 'c', '--tls-key', 'k', '--tls-ca', 'a', '--tls-identity-as-username', 'true'], {})).toThrow(/needs --tls-client-cert required/);
    expect(() => parseServeArgs(['--tls-cert', 'c', '--tls-key', 'k', '--tls-client-cert', 'maybe'], {})).toThrow(/--tls-client-cert 'maybe' is not one of none, optional, required/);
    const defaults = parseServeArgs(['--tls-cert', 'c', '--tls-key', 'k'], {});
    expect([defaults.mqttsPort, defaults.amqpsPort, defaults.httpsPort, defaults.wssPort, defaults.wsPort]).toEqual([8883, 5671, 15671, undefined, undefined]);
    expect(parseServeArgs([], {}).tls).toBeUndefined();
  });

  it('a missing certificate file stops start-up with the flag and the file named', async () => {
    await expect(startEdgeBroker(() => ['--tls-cert', '/nonexistent/cert.pem', '--tls-key', certificates.server.key, '--mqtts-port', '0']))
      .rejects.toThrow(/--tls-cert \/nonexistent\/cert\.pem: cannot read it \(ENOENT\)/);
  });
});
