/**
 * TLS for every listener that has it (MQTT 8883, AMQP 5671, HTTPS, MQTT over
 * wss): one set of certificate files, read at start-up and re-read on
 * SIGHUP. A reload builds a new secure context and hands it to every TLS
 * server (server.setSecureContext; the HTTPS listener's socket thread gets
 * it as a message): connections already up keep the context
 * they shook hands with, new handshakes get the new one, nobody is dropped.
 * A reload that fails (a file missing, a key that does not match its
 * certificate) changes nothing and says why.
 *
 * Only TLS 1.2 and 1.3 are offered. Client certificates, when asked for, are
 * verified against --tls-ca:
 *   none      no certificate is requested
 *   optional  one is requested; a client without one is let in, a client with
 *             one that does not verify is cut off after the handshake
 *   required  the handshake fails without a certificate that verifies
 */
import { readFile } from 'node:fs/promises';
import { createSecureContext, type SecureContextOptions, type TLSSocket, type TlsOptions } from 'node:tls';

export type ClientCertificateMode = 'none' | 'optional' | 'required';
export const clientCertificateModes: readonly ClientCertificateMode[] = ['none', 'optional', 'required'];

export interface TlsSettings {
  readonly certFile: string;
  readonly keyFile: string;
  /** CA bundle that client certificates must chain to. */
  readonly caFile: string | undefined;
  readonly clientCertificates: ClientCertificateMode;
  /** The verified client certificate's CN is the MQTT user name (Mosquitto's use_identity_as_username); needs clientCertificates 'required'. */
  readonly identityAsUsername: boolean;
}

/**
 * What a reload reaches: a TLS server, or a stand-in that passes the context on (the HTTPS listener's socket thread,
 * socket-thread-host.ts). Forgotten once it emits 'close'.
 */
export interface SecureContextHolder {
  setSecureContext(options: SecureContextOptions): void;
  once(event: 'close', listener: () => void): unknown;
}

export class TlsCredentialsError extends Error {
  override readonly name = 'TlsCredentialsError';
  readonly code = 'ETLSCREDENTIALS';
}

interface CredentialFiles {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca: Buffer | undefined;
}

export class TlsCredentials {
  private readonly servers = new Set<SecureContextHolder>();

  private constructor(
    readonly settings: TlsSettings,
    private files: CredentialFiles,
  ) {}

  /** Read and check the files; a problem is a TlsCredentialsError naming the file or the mismatch. */
  static async load(settings: TlsSettings): Promise<TlsCredentials> {
    return new TlsCredentials(settings, await readCredentials(settings));
  }

  /** Options for tls.createServer / https.createServer. */
  serverOptions(): TlsOptions {
    const { clientCertificates } = this.settings;
    return {
      ...secureContextOptions(this.files),
      minVersion: 'TLSv1.2',
      requestCert: clientCertificates !== 'none',
      rejectUnauthorized: clientCertificates === 'required',
    };
  }

  /** Remember a server, so that reload() reaches it; forgotten when it closes. */
  register(server: SecureContextHolder): void {
    this.servers.add(server);
    server.once('close', () => this.servers.delete(server));
  }

  /** Re-read the files and give every registered server the new context; on failure nothing changes. */
  async reload(): Promise<void> {
    const files = await readCredentials(this.settings);
    this.files = files;
    for (const server of this.servers) server.setSecureContext(secureContextOptions(files));
  }

  /**
   * After the handshake: false when the socket must be cut off (optional
   * mode, a certificate was sent and it does not verify). In required mode
   * the handshake itself refused such clients.
   */
  admits(socket: TLSSocket): boolean {
    if (this.settings.clientCertificates !== 'optional' || socket.authorized) return true;
    return Object.keys(socket.getPeerCertificate()).length === 0;
  }

  /**
   * The user name this connection's certificate gives it, when
   * --tls-identity-as-username is on: the CN of the verified certificate ('' when it has none).
   */
  identityOf(socket: TLSSocket): string | undefined {
    if (!this.settings.identityAsUsername || !socket.authorized) return undefined;
    const commonName = socket.getPeerCertificate().subject?.CN;
    return typeof commonName === 'string' ? commonName : '';
  }
}

function secureContextOptions(files: CredentialFiles): { cert: Buffer; key: Buffer; ca?: Buffer } {
  return files.ca === undefined ? { cert: files.cert, key: files.key } : { cert: files.cert, key: files.key, ca: files.ca };
}

async function readCredentials(settings: TlsSettings): Promise<CredentialFiles> {
  const read = async (flag: string, path: string): Promise<Buffer> => {
    try {
      return await readFile(path);
    } catch (error: unknown) {
      const reason = error instanceof Error && 'code' in error ? String(error.code) : 'read failed';
      throw new TlsCredentialsError(`--${flag} ${path}: cannot read it (${reason})`);
    }
  };
  const files: CredentialFiles = {
    cert: await read('tls-cert', settings.certFile),
    key: await read('tls-key', settings.keyFile),
    ca: settings.caFile === undefined ? undefined : await read('tls-ca', settings.caFile),
  };
  try {
    // Fails now, with the reason, rather than at the first handshake.
    createSecureContext(secureContextOptions(files));
  } catch (error: unknown) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new TlsCredentialsError(`--tls-cert ${settings.certFile} / --tls-key ${settings.keyFile}: not a usable certificate and key (${reason})`);
  }
  return files;
}
