/**
 * A stand-in for the broker's HTTP port (CAIRN_BENCH_SCRAPE_DECOY=1 in
 * bench-scrape.ts): `node dist/tools/bench-scrape-decoy.js BROKER_HTTP_PORT`
 * GETs each scraped path from the broker once, then serves those same bytes
 * (status, content type, length) from its own process and prints
 * {"port":N}. A scraper pointed at it loads the machine as the real one does
 * (its own CPU, the kernel's loopback copies of the same bytes) while the
 * broker answers nothing: the scrape bench's ratios with the decoy are the
 * machine's part of the overhead, the rest is the broker's.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { scrapedPaths } from './bench-scraper.js';

interface Captured { readonly contentType: string; readonly body: Buffer }

async function capture(base: string): Promise<Map<string, Captured>> {
  const answers = new Map<string, Captured>();
  for (const path of scrapedPaths) {
    const response = await fetch(`${base}${path}`);
    if (!response.ok) throw new Error(`GET ${path}: ${response.status}`);
    answers.set(path, { contentType: response.headers.get('content-type') ?? 'text/plain', body: Buffer.from(await response.arrayBuffer()) });
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
    response.writeHead(200, { 'Content-Type': answer.contentType, 'Content-Length': answer.body.length, 'Cache-Control': 'no-store' });
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
