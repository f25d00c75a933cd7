/**
 * The NATS connection a JetStream log runs on: every server of the address
 * (the client fails over between them and learns the rest of the cluster),
 * credentials from a `.creds` file (`cairn serve --nats-creds`), TLS when the
 * address says tls://. It reconnects for ever: a lost server is the cluster's
 * business; what the log cannot get acknowledged in time fails the log.
 */
import { readFileSync } from 'node:fs';
import { connect, credsAuthenticator, nanos, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import type { JetStreamAddress } from './jetstream-address.js';

export interface NatsConnectionOptions {
  readonly credsFile?: string | undefined;
  /** A name the servers show for this client (monitoring). */
  readonly name?: string;
}

export async function connectToNats(address: JetStreamAddress, options: NatsConnectionOptions = {}): Promise<NatsConnection> {
  const settings: NodeConnectionOptions = {
    servers: [...address.servers],
    name: options.name ?? 'cairn',
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
  };
  if (options.credsFile !== undefined) {
    const creds = readFileSync(options.credsFile);
    settings.authenticator = credsAuthenticator(new Uint8Array(creds));
  }
  if (address.tls) settings.tls = {};
  return connect(settings);
}

export { nanos, type NatsConnection };
