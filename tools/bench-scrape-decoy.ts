/**
 * A stand-in for the broker's HTTP port (the scrape bench's `decoy` windows,
 * bench-scrape.ts): `node dist/tools/bench-scrape-decoy.js BROKER_HTTP_PORT`
 * GETs each scraped path from the broker once, with the scraper's headers,
 * then serves those same bytes (status, content type and encoding, length)
 * from its own process and prints {"port":N}. A scraper pointed at it loads
 * the machine as the real one does (its own CPU, the kernel's loopback copies
 * of the same bytes) while the broker answers nothing: the bench's decoy
 * windows against plain ones are the machine's part of the overhead, scraped
 * ones against decoy ones the broker's.
 */
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { scrapedRequests } from './bench-scraper.js';

interface Captured { readonly headers: Readonly<Record<string, string>>; readonly body: Buffer }

/** Each scraped path's answer as the broker sent it to the scraper's headers (gzipped where it asked), undecoded. */
async function capture(base: string): Promise<Map<string, Captured>> {
  const answers = new Map<string, Captured>();
  for (const { path, headers } of scrapedRequests) {
    const captured = await new Promise<Captured>((resolve, reject) => {
      request(`${base}${path}`, { headers }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          if (response.statusCode !== 200) reject(new Error(`GET ${path}: ${response.statusCode}`));
          const kept = ['content-type', 'content-encoding', 'vary'].filter((name) => typeof response.headers[name] === 'string');
          resolve({ headers: Object.fromEntries(kept.map((name) => [name, response.headers[name] as string])), body: Buffer.concat(chunks) });
        });
      }).on('error', reject).end();
    });
    answers.set(path, captured);
  }
  return answers;
}

async function main(argv: readonly string[]): Promise<void> {
  const port = Number(argv[0]);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new Error(`usage: node dist/tools/bench-scrape-decoy.js BROKER_HTTP_PORT, got ${argv.join(' ')}`);
  const answers = await capture(`http://127.0.0.1:${port}`);
  const server = createServer((request, response) => {
    const answer = answers.get(request.url ?? '');
    if (answer === undefined) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { ...answer.headers, 'Content-Length': answer.body.length, 'Cache-Control': 'no-store' });
    response.end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
  process.once('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`bench-scrape-decoy: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
