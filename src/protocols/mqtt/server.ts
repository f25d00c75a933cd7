/**
 * The MQTT 3.1.1 listener: accepts TCP connections and gives each one an
 * MqttConnection. It owns the limits (checked once, here), the users, and the
 * set of live connections; closing it closes every connection (without their
 * wills: the broker is stopping, not the clients failing) and the listener.
 *
 * Invariant: a misbehaving connection only ever closes itself; nothing a
 * client sends can throw out of a connection into the server.
 */
import type { Logger } from 'pino';
import type { MqttCore } from '../../core/api.js';
import { anonymousUsers, type Users } from '../../auth/users.js';
import { startTcpListener, type ListenerConnectionEvents, type TcpListener } from '../tcp-listener.js';
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
  readonly connectionEvents?: ListenerConnectionEvents;
}

export type MqttServer = TcpListener<MqttConnection>;

export async function startMqttServer(options: MqttServerOptions): Promise<MqttServer> {
  const limits = resolveMqttLimits(options.limits);
  const logger = options.logger.child({ protocol: 'mqtt' });
  const context: MqttConnectionContext = { core: options.core, users: options.users ?? anonymousUsers, limits, logger };
  return startTcpListener<MqttConnection>({
    protocol: 'mqtt', host: options.host, port: options.port, connectionsMax: limits.connectionsMax, logger,
    connectionEvents: options.connectionEvents, describe: { anonymous: context.users.size === 0 },
    accept: (socket, closed) => new MqttConnection(socket, context, closed),
    shutdown: (connection) => connection.close('server-closing'),
  });
}
