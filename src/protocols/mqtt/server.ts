/**
 * The MQTT 3.1.1 listener: accepts TCP connections and gives each one an
 * MqttConnection. It owns the limits (checked once, here), the users, and the
 * set of live connections; closing it closes every connection (without their
 * wills: the broker is stopping, not the clients failing) and the listener.
 *
 * Invariant: a misbehaving connection only ever closes itself; nothing a
 * client sends can throw out of a connection into the server.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { Logger } from 'pino';
import type { MqttCore } from '../../core/api.js';
import { anonymousUsers, type Users } from '../../auth/users.js';
import { MqttConnection, type MqttConnectionContext } from './connection.js';
import { resolveMqttLimits, type MqttLimits } from './limits.js';

export interface MqttServerOptions {
  readonly core: MqttCore;
  /** Address to bind, e.g. '127.0.0.1' or '0.0.0.0'. */
  readonly host: string;
  /** 0 picks a free port; the returned server says which. */
  readonly port: number;
  readonly logger: Logger;
  /** Overrides of defaultMqttLimits; the result is checked before listening. */
  readonly limits?: Partial<MqttLimits>;
  /** Loaded users (auth/users.ts). Absent or empty: anonymous access. */
  readonly users?: Users;
  /** Told when a connection opens and closes (metrics). */
  readonly connectionEvents?: { connectionOpened(protocol: 'mqtt'): void; connectionClosed(protocol: 'mqtt'): void };
}

export interface MqttServer {
  readonly port: number;
  /** Stop accepting, close every connection, resolve when the listener is closed. */
  close(): Promise<void>;
  /** Live connections, handshaking ones included. */
  connections(): number;
}

export async function startMqttServer(options: MqttServerOptions): Promise<MqttServer> {
  const limits = resolveMqttLimits(options.limits);
  const logger = options.logger.child({ protocol: 'mqtt' });
  const context: MqttConnectionContext = { core: options.core, users: options.users ?? anonymousUsers, limits, logger };
  const live = new Set<MqttConnection>();
  const server = createServer({ noDelay: true });

  server.on('connection', (socket: Socket) => {
    if (live.size >= limits.connectionsMax) {
      logger.warn({ connectionsMax: limits.connectionsMax }, 'MQTT connection refused: connectionsMax reached');
      socket.destroy();
      return;
    }
    const connection = new MqttConnection(socket, context, (closed) => {
      if (live.delete(closed)) options.connectionEvents?.connectionClosed('mqtt');
    });
    live.add(connection);
    options.connectionEvents?.connectionOpened('mqtt');
  });
  server.on('error', (error: Error) => logger.error({ err: error }, 'MQTT listener error'));

  await listen(server, options.host, options.port);
  const port = (server.address() as AddressInfo).port;
  logger.info({ host: options.host, port, anonymous: context.users.size === 0 }, 'MQTT listening');

  return {
    port,
    connections: () => live.size,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const connection of [...live]) connection.close('server-closing');
      await closed;
      logger.info({ port }, 'MQTT listener closed');
    },
  };
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => reject(error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
