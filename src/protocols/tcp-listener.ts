/**
 * The listeners shared by the MQTT and AMQP front ends: TCP_NODELAY on every
 * socket (Nagle would hold acks for ~40 ms), a bound on live connections, the
 * set of live connections, and a close that stops accepting and closes them all.
 * What a connection is, is the protocol's; this file only counts and closes them.
 * With `tls`, the listener speaks TLS (tls-credentials.ts) and hands the
 * protocol a TLSSocket once its handshake is done.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer, type TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import type { TlsCredentials } from './tls-credentials.js';

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
  /** Bytes received and sent since the listener started, closed connections included ($SYS). */
  bytes(): { received: number; sent: number };
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
  /** Serve TLS with these credentials (SIGHUP reloads reach this server). */
  readonly tls?: TlsCredentials | undefined;
  /** Make the protocol's connection for a socket; it calls `closed` once when it is gone. */
  accept(socket: Socket, closed: () => void): C;
  /** Close one connection because the server is stopping. */
  shutdown(connection: C): void;
}

export async function startTcpListener<C>(options: TcpListenerOptions<C>): Promise<TcpListener<C>> {
  const { protocol, logger, tls } = options;
  const name = tls === undefined ? protocol.toUpperCase() : `${protocol.toUpperCase()} over TLS`;
  const server = tls === undefined ? createServer({ noDelay: true }) : createTlsServer({ ...tls.serverOptions(), noDelay: true });
  return serveConnections<C, Socket>({ ...options, name, server }, (admit) => {
    if (tls === undefined) {
      server.on('connection', (socket: Socket) => admit(socket, () => socket.destroy()));
      return;
    }
    server.on('secureConnection', (socket: TLSSocket) => {
      if (tls.admits(socket)) admit(socket, () => socket.destroy());
      else {
        logger.debug({ remote: socket.remoteAddress }, `${name} client certificate does not verify: closing`);
        socket.destroy();
      }
    });
  });
}

export interface ServedConnectionsOptions<C, T> extends Omit<TcpListenerOptions<C>, 'accept'> {
  /** How the log lines call this listener ('MQTT over TLS'). */
  readonly name: string;
  /** A server made but not listening yet. */
  readonly server: Server;
  accept(transport: T, closed: () => void): C;
}

/**
 * What every listener shares, whatever its transport (TCP, TLS, WebSocket):
 * the bound on live connections, counting them, listening, and a close that
 * stops accepting and shuts every connection. `onTransport` wires the
 * server's events to `admit`, which refuses past connectionsMax.
 */
export async function serveConnections<C, T>(
  options: ServedConnectionsOptions<C, T>,
  onTransport: (admit: (transport: T, refuse: () => void) => void) => void,
): Promise<TcpListener<C>> {
  const { protocol, logger, name, server, tls } = options;
  const live = new Map<C, T>();
  const closedBytes = { received: 0, sent: 0 };
  // A TCP or TLS socket counts its bytes; another transport (a WebSocket stream) counts as 0.
  const bytesOf = (transport: T): { received: number; sent: number } => {
    const socket = transport as Partial<Socket>;
    return { received: socket.bytesRead ?? 0, sent: socket.bytesWritten ?? 0 };
  };
  if (tls !== undefined) {
    tls.register(server as TlsServer);
    // A failed handshake (no client certificate where one is required, TLS < 1.2, garbage) never reaches the protocol.
    server.on('tlsClientError', (error: Error, socket: TLSSocket) => {
      logger.debug({ err: error.message, remote: socket.remoteAddress }, `${name} handshake failed`);
    });
  }
  onTransport((transport, refuse) => {
    if (live.size >= options.connectionsMax) {
      logger.warn({ connectionsMax: options.connectionsMax }, `${name} connection refused: connectionsMax reached`);
      refuse();
      return;
    }
    const connection = options.accept(transport, () => {
      const closedTransport = live.get(connection);
      if (closedTransport === undefined || !live.delete(connection)) return;
      const bytes = bytesOf(closedTransport);
      closedBytes.received += bytes.received;
      closedBytes.sent += bytes.sent;
      options.connectionEvents?.connectionClosed(protocol);
    });
    live.set(connection, transport);
    options.connectionEvents?.connectionOpened(protocol);
  });
  server.on('error', (error: Error) => logger.error({ err: error }, `${name} listener error`));
  await listen(server, options.host, options.port);
  const port = (server.address() as AddressInfo).port;
  logger.info({ host: options.host, port, ...(tls ? { tls: true, clientCertificates: tls.settings.clientCertificates } : {}), ...options.describe }, `${name} listening`);
  return {
    port,
    connections: () => live.size,
    list: () => [...live.keys()],
    bytes: () => {
      const totals = { ...closedBytes };
      for (const transport of live.values()) {
        const bytes = bytesOf(transport);
        totals.received += bytes.received;
        totals.sent += bytes.sent;
      }
      return totals;
    },
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const connection of [...live.keys()]) options.shutdown(connection);
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
