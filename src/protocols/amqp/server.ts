/**
 * The AMQP 0-9-1 listener: accepts TCP connections and gives each one an
 * AmqpConnection. It owns the limits (checked once, here), the users, and
 * the set of live connections; closing it tells every client the broker is
 * stopping (320 CONNECTION_FORCED), requeues what they held, and closes the
 * listener.
 *
 * Invariant: a misbehaving connection only ever closes itself; nothing a
 * client sends can throw out of a connection into the server.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { Logger } from 'pino';
import { anonymousUsers, type Users } from '../../auth/users.js';
import type { AmqpCore } from '../../core/api.js';
import { AmqpConnection, type AmqpConnectionContext } from './connection.js';
import { resolveAmqpLimits, type AmqpLimits } from './limits.js';

export interface AmqpServerOptions {
  readonly core: AmqpCore;
  /** Address to bind, e.g. '127.0.0.1' or '0.0.0.0'. */
  readonly host: string;
  /** 0 picks a free port; the returned server says which. */
  readonly port: number;
  readonly logger: Logger;
  /** Loaded users (auth/users.ts). Absent or empty: anonymous access. */
  readonly users?: Users;
  /** Told when a connection opens and closes (metrics). */
  readonly connectionEvents?: { connectionOpened(protocol: 'amqp'): void; connectionClosed(protocol: 'amqp'): void };
  /** Overrides of defaultAmqpLimits; the result is checked before listening. */
  readonly limits?: Partial<AmqpLimits>;
}

export interface AmqpServer {
  readonly port: number;
  /** Stop accepting, close every connection, resolve when the listener is closed. */
  close(): Promise<void>;
  /** Live connections, handshaking ones included. */
  connections(): number;
}

export async function startAmqpServer(options: AmqpServerOptions): Promise<AmqpServer> {
  const limits = resolveAmqpLimits(options.limits);
  const logger = options.logger.child({ protocol: 'amqp' });
  const context: AmqpConnectionContext = { core: options.core, users: options.users ?? anonymousUsers, limits, logger };
  const live = new Set<AmqpConnection>();
  const server = createServer({ noDelay: true });

  server.on('connection', (socket: Socket) => {
    if (live.size >= limits.connectionsMax) {
      logger.warn({ connectionsMax: limits.connectionsMax }, 'AMQP connection refused: connectionsMax reached');
      socket.destroy();
      return;
    }
    const connection = new AmqpConnection(socket, context, (closed) => {
      if (live.delete(closed)) options.connectionEvents?.connectionClosed('amqp');
    });
    live.add(connection);
    options.connectionEvents?.connectionOpened('amqp');
  });
  server.on('error', (error: Error) => logger.error({ err: error }, 'AMQP listener error'));

  await listen(server, options.host, options.port);
  const port = (server.address() as AddressInfo).port;
  logger.info({ host: options.host, port, anonymous: context.users.size === 0 }, 'AMQP listening');

  return {
    port,
    connections: () => live.size,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const connection of [...live]) connection.shutdown();
      await closed;
      logger.info({ port }, 'AMQP listener closed');
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
