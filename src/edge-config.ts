/**
 * The `cairn serve` flags at the edge: TLS (certificate, key, CA, client
 * certificates), the TLS listeners, MQTT over WebSocket and the topic ACL
 * file — declared as data like the other flags (src/config.ts), plus the
 * rules between them that no single flag's check can see (a TLS port needs a
 * certificate; client certificates need a CA; the CN as user name needs
 * required client certificates).
 */
import { UsageError, type FlagSpec, type ParsedCommand } from './command-line/flags.js';
import { choiceKind, portKind, textKind } from './command-line/value-kinds.js';
import { clientCertificateModes, type TlsSettings } from './protocols/tls-credentials.js';

export interface EdgeConfig {
  /** undefined: no TLS listener at all. */
  readonly tls: TlsSettings | undefined;
  readonly mqttsPort: number | undefined;
  readonly amqpsPort: number | undefined;
  readonly httpsPort: number | undefined;
  readonly wsPort: number | undefined;
  readonly wssPort: number | undefined;
  readonly aclFile: string | undefined;
}

const clientCertificateKind = choiceKind(clientCertificateModes);
const booleanText = choiceKind(['true', 'false'] as const);

export const edgeFlags: readonly FlagSpec[] = [
  { name: 'tls-cert', ...textKind('FILE'), env: 'CAIRN_TLS_CERT', help: 'server certificate (PEM, chain included); with --tls-key turns on the TLS listeners' },
  { name: 'tls-key', ...textKind('FILE'), env: 'CAIRN_TLS_KEY', help: 'private key of --tls-cert (PEM); both are re-read on SIGHUP' },
  { name: 'tls-ca', ...textKind('FILE'), env: 'CAIRN_TLS_CA', help: 'CA bundle (PEM) that client certificates must chain to' },
  { name: 'tls-client-cert', ...clientCertificateKind, env: 'CAIRN_TLS_CLIENT_CERT', fallback: 'none', help: "client certificates: 'none', 'optional' (verified when sent) or 'required'" },
  { name: 'tls-identity-as-username', ...booleanText, env: 'CAIRN_TLS_IDENTITY_AS_USERNAME', fallback: 'false', help: "'true': a client certificate's CN is the MQTT user name, no password (needs --tls-client-cert required)" },
  { name: 'mqtts-port', ...portKind, env: 'CAIRN_MQTTS_PORT', fallback: '8883', help: "MQTT over TLS port (with --tls-cert); 0 picks a free one; 'off' disables" },
  { name: 'amqps-port', ...portKind, env: 'CAIRN_AMQPS_PORT', fallback: '5671', help: "AMQP over TLS port (with --tls-cert); 0 picks a free one; 'off' disables" },
  { name: 'https-port', ...portKind, env: 'CAIRN_HTTPS_PORT', fallback: '15671', help: "HTTP API over TLS port (with --tls-cert); 0 picks a free one; 'off' disables" },
  { name: 'ws-port', ...portKind, env: 'CAIRN_WS_PORT', fallback: 'off', help: "MQTT over WebSocket port (ws://HOST:PORT/mqtt), e.g. 8080; 'off' disables" },
  { name: 'wss-port', ...portKind, env: 'CAIRN_WSS_PORT', fallback: 'off', help: "MQTT over secure WebSocket port (wss://HOST:PORT/mqtt, with --tls-cert); 'off' disables" },
  { name: 'acl', ...textKind('FILE'), env: 'CAIRN_ACL', help: "topic ACL file (Mosquitto's acl_file format), re-read on SIGHUP; none = every topic open" },
];

export function edgeConfigOf(parsed: ParsedCommand): EdgeConfig {
  const get = (name: string): string | undefined => {
    const value = parsed.values.get(name)?.value;
    return value === '' ? undefined : value;
  };
  const tls = tlsSettings(get);
  const tlsPort = (flag: string): number | undefined => {
    if (tls === undefined) {
      // A TLS port the user set (flag, environment or file), not just the default, needs a certificate.
      const resolved = parsed.values.get(flag);
      if (resolved !== undefined && resolved.source !== 'default' && resolved.value !== 'off') throw new UsageError(`--${flag} needs --tls-cert and --tls-key`);
      return undefined;
    }
    return portKind.convert(get(flag) ?? 'off');
  };
  return {
    tls,
    mqttsPort: tlsPort('mqtts-port'),
    amqpsPort: tlsPort('amqps-port'),
    httpsPort: tlsPort('https-port'),
    wsPort: portKind.convert(get('ws-port') ?? 'off'),
    wssPort: tlsPort('wss-port'),
    aclFile: get('acl'),
  };
}

function tlsSettings(get: (name: string) => string | undefined): TlsSettings | undefined {
  const certFile = get('tls-cert');
  const keyFile = get('tls-key');
  const caFile = get('tls-ca');
  const clientCertificates = clientCertificateKind.convert(get('tls-client-cert') ?? 'none');
  const identityAsUsername = get('tls-identity-as-username') === 'true';
  if (certFile === undefined && keyFile === undefined) {
    if (caFile !== undefined || clientCertificates !== 'none' || identityAsUsername) throw new UsageError('--tls-ca, --tls-client-cert and --tls-identity-as-username need --tls-cert and --tls-key');
    return undefined;
  }
  if (certFile === undefined || keyFile === undefined) throw new UsageError('--tls-cert and --tls-key go together: give both');
  if (clientCertificates !== 'none' && caFile === undefined) throw new UsageError(`--tls-client-cert ${clientCertificates} needs --tls-ca (the CA that client certificates chain to)`);
  if (identityAsUsername && clientCertificates !== 'required') throw new UsageError('--tls-identity-as-username true needs --tls-client-cert required (a name from an unverified certificate proves nothing)');
  return { certFile, keyFile, caFile, clientCertificates, identityAsUsername };
}
