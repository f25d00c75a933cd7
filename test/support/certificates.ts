/**
 * Certificates made for a test with the openssl CLI, in a temporary
 * directory: a CA, server certificates for 127.0.0.1 and localhost signed by
 * it, client certificates (CN = the name given) signed by it, and a client
 * certificate from another CA that the broker must not trust. EC P-256 keys
 * and one-day validity keep generation fast.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CertificatePair {
  readonly cert: string;
  readonly key: string;
}

export interface TestCertificates {
  readonly dir: string;
  /** PEM file of the CA (what clients pass as `ca` / `--cafile`). */
  readonly caFile: string;
  readonly ca: Buffer;
  /** A server certificate for 127.0.0.1 and localhost. */
  readonly server: CertificatePair;
  /** Another one for the same names, serial and subject different (to see a reload take effect). */
  readonly server2: CertificatePair;
  /** A client certificate with CN = `name`, signed by the CA. */
  client(name: string): CertificatePair;
  /** A client certificate signed by a CA the broker does not know. */
  readonly stranger: CertificatePair;
}

function openssl(dir: string, args: readonly string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

const keyArgs = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function makeCa(dir: string, name: string): void {
  openssl(dir, ['req', '-x509', ...keyArgs, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '1', '-subj', `/CN=${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
}

function signed(dir: string, ca: string, name: string, commonName: string, extensions: string): CertificatePair {
  openssl(dir, ['req', ...keyArgs, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${commonName}`]);
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', '-extfile', `${name}.ext`]);
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

export function makeTestCertificates(dir: string): TestCertificates {
  makeCa(dir, 'ca');
  makeCa(dir, 'other-ca');
  const serverExtensions = 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n';
  const clientExtensions = 'extendedKeyUsage=clientAuth\n';
  const server = signed(dir, 'ca', 'server', 'cairn-test-server', serverExtensions);
  const server2 = signed(dir, 'ca', 'server2', 'cairn-test-server-renewed', serverExtensions);
  const stranger = signed(dir, 'other-ca', 'stranger', 'stranger', clientExtensions);
  const clients = new Map<string, CertificatePair>();
  return {
    dir, caFile: join(dir, 'ca.crt'), ca: readFileSync(join(dir, 'ca.crt')), server, server2, stranger,
    client: (name) => {
      let pair = clients.get(name);
      if (pair === undefined) {
        pair = signed(dir, 'ca', `client-${clients.size}`, name, clientExtensions);
        clients.set(name, pair);
      }
      return pair;
    },
  };
}
