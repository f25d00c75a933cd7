/**
 * A TCP listener shared by the MQTT and AMQP front ends: TCP_NODELAY on every
 * socket (Nagle would hold acks for ~40 ms), a bound on live connections, the
 * set of live connections, and a close that stops accepting and closes them all.
 * What a connection is, is the protocol's; this file only counts and closes them.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { Logger } from 'pino';

export type ListenerProtocol = 'mqtt' | 'amqp';

export interface ListenerConnectionEvents {
  connectionOpened(protocol: ListenerProtocol): void;
  connectionClosed(protocol: ListenerProtocol): void;
}

export interface TcpListener<C = unknown> {
  readonly port: number;
  /** Live connections, handshaking ones included. */
  connections(): number;
  /** The live connections themselves (for the management API), handshaking ones included. */
  list(): readonly C[];
  /** Stop accepting, close every connection, resolve when the listener is closed. */
  close(): Promise<void>;
}

export interface TcpListenerOptions<C> {
  readonly protocol: ListenerProtocol;
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly connectionsMax: number;
  readonly logger: Logger;
  readonly connectionEvents?: ListenerConnectionEvents | undefined;
  /** Extra fields for the "listening" log line. */
  readonly describe?: Record<string, unknown>;
  /** Make the protocol's connection for a socket; it calls `closed` once when it is gone. */
  accept(socket: Socket, closed: () => void): C;
  /** Close one connection because the server is stopping. */
  shutdown(connection: C): void;
}

export async function startTcpListener<C>(options: TcpListenerOptions<C>): Promise<TcpListener<C>> {
  const { protocol, logger } = options;
  const name = protocol.toUpperCase();
  const live = new Set<C>();
  const server = createServer({ noDelay: true });
  server.on('connection', (socket: Socket) => {
    if (live.size >= options.connectionsMax) {
      logger.warn({ connectionsMax: options.connectionsMax }, `${name} connection refused: connectionsMax reached`);
      socket.destroy();
      return;
    }
    const connection = options.accept(socket, () => {
      if (live.delete(connection)) options.connectionEvents?.connectionClosed(protocol);
    });
    live.add(connection);
    options.connectionEvents?.connectionOpened(protocol);
  });
  server.on('error', (error: Error) => logger.error({ err: error }, `${name} listener error`));
  await listen(server, options.host, options.port);
  const port = (server.address() as AddressInfo).port;
  logger.info({ host: options.host, port, ...options.describe }, `${name} listening`);
  return {
    port,
    connections: () => live.size,
    list: () => [...live],
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const connection of [...live]) options.shutdown(connection);
      await closed;
      logger.info({ port }, `${name} listener closed`);
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
