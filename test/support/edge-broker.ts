/**
 * A whole Cairn (startCairn, the CLI's own flag parser) in a temporary data
 * directory with every listener on port 0, for the tests of TLS, WebSocket
 * and ACLs; plus MQTT.js helpers that resolve on CONNACK and collect
 * deliveries. Everything opened is closed by `closeAll`.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mqtt, { type IClientOptions, type IConnackPacket, type MqttClient } from 'mqtt';
import { hashPassword } from '../../src/auth/users.js';
import { parseServeArgs } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { startCairn, type RunningCairn } from '../../src/server.js';
import { tempDirectory } from './kit.js';

export interface EdgeBroker {
  readonly dir: string;
  readonly running: RunningCairn;
  /** Write a file beside the data directory; returns its path. */
  file(name: string, text: string): string;
  /**
   * Connect with MQTT.js (no reconnects); resolves on CONNACK 0, rejects with the refusal.
   * `lines`: collect messages from the start (those that follow CONNACK in the same read too).
   */
  connect(url: string, options?: IClientOptions): Promise<{ client: MqttClient; connack: IConnackPacket; lines: string[] }>;
  close(): Promise<void>;
}

/** Ports that are on by default, set to 0 (or off) so that tests never collide. */
const portFlags = ['--mqtt-port', '0', '--amqp-port', '0', '--http-port', '0'];

/** Start a broker with `args` after the port flags; `prepare` may write files (ACL, users) into the directory first. */
export async function startEdgeBroker(args: (dir: string) => readonly string[] | Promise<readonly string[]>): Promise<EdgeBroker> {
  const temporary = tempDirectory('cairn-edge-');
  const clients: MqttClient[] = [];
  let running: RunningCairn;
  try {
    running = await startCairn(parseServeArgs(['--data', join(temporary.path, 'data'), ...portFlags, ...(await args(temporary.path))], {}), silentLogger());
  } catch (error) {
    temporary.remove();
    throw error;
  }
  return {
    dir: temporary.path,
    running,
    file: (name, text) => writeTestFile(temporary.path, name, text),
    connect: (url, options = {}) => {
      const client = mqtt.connect(url, { protocolVersion: 4, reconnectPeriod: 0, connectTimeout: 5_000, ...options });
      clients.push(client);
      const lines = collectMessages(client);
      return new Promise((resolve, reject) => {
        client.once('connect', (connack) => resolve({ client, connack, lines }));
        client.once('error', reject);
        client.once('close', () => reject(new Error('closed before CONNACK')));
      });
    },
    close: async () => {
      for (const client of clients) client.end(true);
      await running.close();
      temporary.remove();
    },
  };
}

export function writeTestFile(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** A users file with these users, all with the same password. */
export async function writeUsersFile(dir: string, users: ReadonlyArray<string | { username: string; [field: string]: unknown }>, password: string): Promise<string> {
  const hash = await hashPassword(password);
  const entries = users.map((user) => (typeof user === 'string' ? { username: user, password: hash } : { ...user, password: hash }));
  return writeTestFile(dir, 'users.json', JSON.stringify({ users: entries }));
}

/** Every message a client receives, as "topic payload". */
export function collectMessages(client: MqttClient): string[] {
  const lines: string[] = [];
  client.on('message', (topic, payload) => lines.push(`${topic} ${payload.toString()}`));
  return lines;
}
