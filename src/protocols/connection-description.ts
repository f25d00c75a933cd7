/**
 * What an operator may learn about a live client connection, and the one
 * thing they may do to it (close it). Both front ends' connections implement
 * ManagedConnection; the HTTP management API lists them (/api/connections,
 * /api/channels, /api/consumers) without knowing either protocol.
 *
 * A description is a snapshot built on demand: nothing here is kept up to
 * date on the hot paths, so describing costs nothing until someone asks.
 */
/** What a description reads from a transport: a TCP or TLS socket, or a WebSocket stream (which reports its socket's). */
export interface DescribedTransport {
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
  readonly localAddress?: string | undefined;
  readonly localPort?: number | undefined;
  readonly bytesRead: number;
  readonly bytesWritten: number;
}

export type ConnectionProtocol = 'mqtt' | 'amqp';

export interface ConsumerDescription {
  readonly tag: string;
  readonly queue: string;
  /** False for no-ack consumers. */
  readonly ackRequired: boolean;
  /** 0: unlimited. */
  readonly prefetch: number;
  /** consume-ok is on the wire, deliveries may flow. */
  readonly active: boolean;
}

export interface ChannelDescription {
  readonly number: number;
  readonly state: 'open' | 'closing' | 'finished';
  readonly consumers: readonly ConsumerDescription[];
  /** Deliveries (consumer and basic.get) not yet acked, rejected or requeued. */
  readonly unacknowledged: number;
  /** basic.qos global=false: the prefetch of consumers created from now on. */
  readonly prefetch: number;
  /** basic.qos global=true. */
  readonly globalPrefetch: number;
  /** confirm.select was sent. */
  readonly confirm: boolean;
  /** Publishes whose confirm has not been sent yet. */
  readonly unconfirmed: number;
}

export interface ConnectionDescription {
  readonly protocol: ConnectionProtocol;
  /** Unique while the connection lives, RabbitMQ's form: "peer:port -> local:port". */
  readonly name: string;
  readonly peerHost: string;
  readonly peerPort: number;
  readonly host: string;
  readonly port: number;
  /** The authenticated user; undefined before login or with anonymous access. */
  readonly user: string | undefined;
  /** Wall-clock ms when the socket was accepted. */
  readonly connectedAt: number;
  /** 'starting' while handshaking, 'running' once open, 'closing' on the way out. */
  readonly state: 'starting' | 'running' | 'closing' | 'closed';
  readonly receivedBytes: number;
  readonly sentBytes: number;
  /** MQTT: the client id, once CONNECT was accepted. */
  readonly clientId?: string;
  /** AMQP: the client-properties table of start-ok, as plain JSON. */
  readonly clientProperties?: Readonly<Record<string, unknown>>;
  /** AMQP: negotiated values (0 before tune-ok). */
  readonly heartbeatSeconds?: number;
  readonly frameMax?: number;
  readonly channelMax?: number;
  /** AMQP channels; MQTT has none. */
  readonly channels: readonly ChannelDescription[];
}

export interface ManagedConnection {
  describe(): ConnectionDescription;
  /** An operator asked for this connection to go (AMQP: 320 CONNECTION_FORCED with the reason). */
  closeByOperator(reason: string): void;
}

/** The socket half of a description: addresses, the RabbitMQ-style name, byte counts. */
export function socketDescription(socket: DescribedTransport): Pick<ConnectionDescription, 'name' | 'peerHost' | 'peerPort' | 'host' | 'port' | 'receivedBytes' | 'sentBytes'> {
  const peerHost = socket.remoteAddress ?? '?';
  const peerPort = socket.remotePort ?? 0;
  const host = socket.localAddress ?? '?';
  const port = socket.localPort ?? 0;
  return { name: `${peerHost}:${peerPort} -> ${host}:${port}`, peerHost, peerPort, host, port, receivedBytes: socket.bytesRead, sentBytes: socket.bytesWritten };
}
