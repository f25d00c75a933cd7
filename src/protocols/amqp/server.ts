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
import type { Logger } from 'pino';
import { anonymousUsers, type Users } from '../../auth/users.js';
import { startTcpListener, type ListenerConnectionEvents, type TcpListener } from '../tcp-listener.js';
import type { TlsCredentials } from '../tls-credentials.js';
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
  readonly connectionEvents?: ListenerConnectionEvents;
  /** Overrides of defaultAmqpLimits; the result is checked before listening. */
  readonly limits?: Partial<AmqpLimits>;
  /** Serve AMQP over TLS (amqps, 5671) with these credentials. */
  readonly tls?: TlsCredentials | undefined;
  /** Told of every permission refusal (metrics). */
  readonly accessDenied?: (() => void) | undefined;
  /** Why publishers are held back now (disk-free-alarm.ts); the server is told of changes through publishAlarmChanged. */
  readonly publishAlarm?: { readonly reason: string | undefined } | undefined;
}

export type AmqpServer = TcpListener<AmqpConnection>;

export async function startAmqpServer(options: AmqpServerOptions): Promise<AmqpServer> {
  const limits = resolveAmqpLimits(options.limits);
  const logger = options.logger.child({ protocol: 'amqp' });
  const context: AmqpConnectionContext = {
    core: options.core, users: options.users ?? anonymousUsers, limits, logger, accessDenied: options.accessDenied, publishAlarm: options.publishAlarm,
  };
  return startTcpListener<AmqpConnection>({
    protocol: 'amqp', host: options.host, port: options.port, connectionsMax: limits.connectionsMax, logger,
    connectionEvents: options.connectionEvents, describe: { anonymous: context.users.size === 0 }, tls: options.tls,
    accept: (socket, closed) => new AmqpConnection(socket, context, closed),
    shutdown: (connection) => connection.shutdown(),
  });
}
