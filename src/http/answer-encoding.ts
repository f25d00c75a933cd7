/**
 * Answers gzipped for clients that accept it (Prometheus sends
 * `Accept-Encoding: gzip` with every scrape; browsers and most HTTP libraries
 * send it too), on libuv's thread pool (zlib's asynchronous API): a scrape
 * round over 1,000 queues is ~760 KB of text, ~28 KB gzipped, and the
 * kernel's copy of the plain bytes into loopback sockets took ~2.5 ms of the
 * event loop a round, each write one more interruption of a sequential
 * client (issue 15). The sockets are now written by the listener's socket
 * thread (socket-thread.js); what the loop still pays is a copy of the
 * answer into the message to that thread, smaller gzipped. Clients that do
 * not ask for gzip get the same bytes unencoded.
 */
import { constants, gzip } from 'node:zlib';

/**
 * Smaller answers go unencoded: zlib's asynchronous call costs the event loop ~0.74 million instructions whatever the
 * size (a stream, a native context, two callbacks; callgrind), about what the kernel's copy of 64-75 KB into a
 * loopback socket cost it (~2.5 ms per 760 KB) when the loop wrote the sockets. Since the socket thread writes them,
 * the loop's cost of an unencoded answer is its copy into the message to that thread, far less: the break-even is
 * higher now, not re-measured (gzip on the socket thread would take it off the loop altogether).
 */
export const gzipBytesMin = 64 * 1024;

/**
 * Fastest compression: ~1.7 ms of the pool a scrape round at level 1, ~2.8 ms at zlib's default 6, for 27 vs 28 KB
 * (the answers are repetitive text). The output buffer holds a whole answer's output, so one pool job encodes it
 * (zlib returns to the loop once per full output buffer).
 */
const gzipOptions = { level: constants.Z_BEST_SPEED, chunkSize: 256 * 1024 };

/**
 * Whether an Accept-Encoding field value admits gzip [RFC 9110 12.5.3]: `gzip` (or `x-gzip`, its alias [RFC 9110
 * 8.4.1.3]) or `*` listed with a weight above 0, and gzip not refused by name (`gzip;q=0` wins over `*`).
 */
export function acceptsGzip(acceptEncoding: string | undefined): boolean {
  if (acceptEncoding === undefined) return false;
  let named: boolean | undefined;
  let any = false;
  for (const member of acceptEncoding.split(',')) {
    const [coding = '', ...parameters] = member.split(';');
    const name = coding.trim().toLowerCase();
    const weight = parameters.map((p) => /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(p)).find((m) => m !== null);
    const accepted = weight === undefined || Number(weight[1]) > 0;
    if (name === 'gzip' || name === 'x-gzip') named = (named ?? false) || accepted;
    else if (name === '*') any = accepted;
  }
  return named ?? any;
}

/** `bytes` gzipped on the thread pool; `bytes` is not read once this resolves or rejects (a pooled buffer may be reused). */
export function gzipOnPool(bytes: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    gzip(bytes, gzipOptions, (error, result) => (error === null ? resolve(result) : reject(error)));
  });
}
