/**
 * The MQTT 3.1.1 listener: accepts TCP connections and gives each one an
 * MqttConnection. It owns the limits (checked once, here), the users, and the
 * set of live connections; closing it closes every connection (without their
 * wills: the broker is stopping, not the clients failing) and the listener.
 *
 * Invariant: a misbehaving connection only ever closes itself; nothing a
 * client sends can throw out of a connection into the server.
 */
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import type { MqttCore } from '../../core/api.js';
import type { AclSource } from '../../auth/acl-file.js';
import { anonymousUsers, type Users } from '../../auth/users.js';
import { startTcpListener, type ListenerConnectionEvents, type TcpListener } from '../tcp-listener.js';
import type { TlsCredentials } from '../tls-credentials.js';
import { MqttConnection, type MqttConnectionContext } from './connection.js';
import { resolveMqttLimits, type MqttLimits } from './limits.js';
import type { AccessDeniedListener } from './topic-access.js';

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
  /** Serve MQTT over TLS (8883) with these credentials. */
  readonly tls?: TlsCredentials | undefined;
  /** Topic ACL (--acl). */
  readonly acl?: AclSource | undefined;
  /** Told of every ACL refusal (metrics). */
  readonly accessDenied?: AccessDeniedListener | undefined;
}

export type MqttServer = TcpListener<MqttConnection>;

/** The limits checked once, the logger and the context every connection of one listener shares. */
export function mqttConnectionContext(options: MqttServerOptions): MqttConnectionContext {
  return {
    core: options.core, users: options.users ?? anonymousUsers, limits: resolveMqttLimits(options.limits),
    logger: options.logger.child({ protocol: 'mqtt' }), acl: options.acl, accessDenied: options.accessDenied,
  };
}

export async function startMqttServer(options: MqttServerOptions): Promise<MqttServer> {
  const context = mqttConnectionContext(options);
  const { tls } = options;
  return startTcpListener<MqttConnection>({
    protocol: 'mqtt', host: options.host, port: options.port, connectionsMax: context.limits.connectionsMax, logger: context.logger,
    connectionEvents: options.connectionEvents, describe: { anonymous: context.users.size === 0, acl: context.acl !== undefined }, tls,
    accept: (socket, closed) => new MqttConnection(socket, context, closed, tls?.identityOf(socket as TLSSocket)),
    shutdown: (connection) => connection.close('server-closing'),
  });
}
