/**
 * socket-reads.ts: an accepted plain TCP socket is read into the shared
 * buffer (no 'data' events), each chunk is its own copy, pause and resume
 * still stop and restart reading, the end of the stream still closes the
 * socket; any other transport is read through 'data'.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { lendSocketBytes, receiveSocketBytes } from '../../src/protocols/socket-reads.js';
import { testSeed, announceSeed, seededRandom, until } from '../support/kit.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A listener whose accepted sockets are read through `read` (receiveSocketBytes unless said), and one client connected to it. */
async function connectedPair(read = receiveSocketBytes, receive?: (chunk: Buffer) => void): Promise<{ client: Socket; accepted: Socket; chunks: Buffer[]; mode: string }> {
  const chunks: Buffer[] = [];
  let accepted: Socket | undefined;
  let mode = '';
  const server: Server = createServer({ noDelay: true }, (socket) => {
    accepted = socket;
    mode = read(socket, (chunk) => { chunks.push(chunk); receive?.(chunk); });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const client = connect(port, '127.0.0.1');
  cleanups.push(() => { client.destroy(); accepted?.destroy(); server.close(); });
  await until(() => accepted !== undefined, 'the connection is accepted');
  return { client, accepted: accepted!, chunks, mode };
}

describe('receiveSocketBytes', () => {
  it('reads an accepted TCP socket directly: no data listener, every byte in order, each chunk its own copy', async () => {
    announceSeed('socket-reads');
    const random = seededRandom(testSeed);
    const { client, accepted, chunks, mode } = await connectedPair();
    expect(mode).toBe('direct');
    expect(accepted.listenerCount('data')).toBe(0);
    // Many writes of random sizes, some larger than the 64 KiB read buffer: the reads cut them anywhere.
    const sent: Buffer[] = [];
    for (let i = 0; i < 40; i++) {
      const part = Buffer.alloc(1 + Math.floor(random() * (i % 5 === 0 ? 200_000 : 3_000)), i);
      sent.push(part);
      client.write(part);
    }
    const expected = Buffer.concat(sent);
    await until(() => chunks.reduce((sum, chunk) => sum + chunk.length, 0) >= expected.length, 'every byte is read');
    // Were a chunk a view of the shared read buffer, later reads would have overwritten it.
    expect(chunks.length).toBeGreaterThan(1);
    expect(Buffer.concat(chunks).equals(expected)).toBe(true);
    expect(accepted.bytesRead).toBe(expected.length);
  });

  it('stops reading on pause and reads what arrived meanwhile on resume', async () => {
    const { client, accepted, chunks } = await connectedPair();
    client.write('one');
    await until(() => chunks.length === 1, 'the first write is read');
    accepted.pause();
    client.write('two');
    // On loopback a returned write is in the server's receive queue: two turns of the loop poll it at least once.
    await until(() => client.bytesWritten === 6 && client.writableLength === 0, 'the second write is sent');
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(Buffer.concat(chunks).toString()).toBe('one');
    accepted.resume();
    await until(() => Buffer.concat(chunks).toString() === 'onetwo', 'the second write is read after resume');
  });

  it('still ends and closes the socket when the peer closes', async () => {
    const { client, accepted, chunks } = await connectedPair();
    let closed = false;
    accepted.on('close', () => { closed = true; });
    client.end('last');
    await until(() => closed, 'the accepted socket closes after the peer ends');
    expect(Buffer.concat(chunks).toString()).toBe('last');
  });

  it('lends each direct read: a view of the one read buffer, every byte in order when copied during the call', async () => {
    const copies: Buffer[] = [];
    const { client, chunks: lent, mode } = await connectedPair(lendSocketBytes, (chunk) => copies.push(Buffer.from(chunk)));
    const sent = Buffer.alloc(300_000);
    for (let i = 0; i < sent.length; i++) sent[i] = (i * 13) % 251;
    client.write(sent);
    await until(() => copies.reduce((sum, chunk) => sum + chunk.length, 0) >= sent.length, 'every byte is read');
    expect(mode).toBe('direct');
    expect(lent.length).toBeGreaterThan(1);
    // One buffer lent again and again: what a chunk held is gone once the next read came in.
    expect(new Set(lent.map((chunk) => chunk.buffer)).size).toBe(1);
    expect(lent.every((chunk) => chunk.byteOffset === lent[0]!.byteOffset)).toBe(true);
    expect(Buffer.concat(copies).equals(sent)).toBe(true);
  });

  it('reads any other transport through its data events', async () => {
    const stream = new PassThrough();
    const chunks: Buffer[] = [];
    expect(receiveSocketBytes(stream, (chunk) => chunks.push(chunk))).toBe('data-events');
    stream.write(Buffer.from('abc'));
    await until(() => chunks.length === 1, 'the chunk arrives');
    expect(chunks[0]!.toString()).toBe('abc');
  });
});
