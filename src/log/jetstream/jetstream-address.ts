/**
 * The address of a JetStream log, as `cairn serve --log` takes it:
 *
 *   nats://host1:4222,host2:4222,host3:4222/stream
 *
 * the servers a client may connect to (any of the cluster's nodes; the client
 * learns the others) and the stream's name. A port-less host gets 4222.
 * `tls://` instead of `nats://` asks for TLS to the servers.
 */
import { LogError } from '../errors.js';

export interface JetStreamAddress {
  readonly servers: readonly string[];
  readonly stream: string;
  readonly tls: boolean;
}

const defaultPort = 4222;
/** JetStream stream names: no whitespace, `.`, `*`, `>`, path separators. */
const streamNamePattern = /^[A-Za-z0-9_-]{1,64}$/;

export function parseJetStreamAddress(text: string): JetStreamAddress {
  const match = /^(nats|tls):\/\/([^/]+)\/([^/]+)$/.exec(text);
  if (match === null) throw new LogError('EINVALIDARGUMENT', `a JetStream log address is nats://host:port[,host:port…]/stream, got ${JSON.stringify(text)}`);
  const [, scheme, hostList, stream] = match as unknown as [string, string, string, string];
  if (!streamNamePattern.test(stream)) {
    throw new LogError('EINVALIDARGUMENT', `the stream name ${JSON.stringify(stream)} in ${JSON.stringify(text)} must be 1..64 letters, digits, '-' or '_'`);
  }
  const servers = hostList.split(',').map((host) => {
    const trimmed = host.trim();
    if (!/^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/.test(trimmed)) throw new LogError('EINVALIDARGUMENT', `${JSON.stringify(host)} in ${JSON.stringify(text)} is not host[:port]`);
    return /:\d+$/.test(trimmed) && !trimmed.endsWith(']') ? trimmed : `${trimmed}:${defaultPort}`;
  });
  return { servers, stream, tls: scheme === 'tls' };
}
