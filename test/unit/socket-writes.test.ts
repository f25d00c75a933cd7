/**
 * socket-writes.ts: an accepted plain TCP socket is written through its
 * handle while its Writable holds nothing; when the kernel's buffer is full
 * the rest waits in libuv, and bytes written meanwhile through the Writable
 * (a cork) or directly still arrive in the order written; a failed write
 * destroys the socket; any other transport is written through its Writable.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { socketWriter } from '../../src/protocols/socket-writes.js';
import { announceSeed, seededRandom, testSeed, until } from '../support/kit.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function connectedPair(): Promise<{ client: Socket; accepted: Socket }> {
  let accepted: Socket | undefined;
  const server: Server = createServer({ noDelay: true }, (socket) => { accepted = socket; });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = connect((server.address() as { port: number }).port, '127.0.0.1');
  cleanups.push(() => { client.destroy(); accepted?.destroy(); server.close(); });
  await until(() => accepted !== undefined, 'the connection is accepted');
  return { client, accepted: accepted! };
}

describe('socketWriter', () => {
  it('writes a TCP socket through its handle: no Writable write, bytes and bytesWritten as sent', async () => {
    const { client, accepted } = await connectedPair();
    const writer = socketWriter(accepted);
    expect(writer.mode).toBe('direct');
    let streamWrites = 0;
    const write = accepted.write.bind(accepted);
    accepted.write = ((...args: Parameters<Socket['write']>) => { streamWrites++; return write(...args); }) as Socket['write'];
    const received: Buffer[] = [];
    client.on('data', (chunk: Buffer) => received.push(chunk));
    for (let i = 0; i < 100; i++) writer.write(Buffer.from([0x40, 0x02, i >> 8, i & 0xff]));
    await until(() => Buffer.concat(received).length === 400, 'every byte arrives');
    expect(writer.directWrites).toBe(100);
    expect(streamWrites).toBe(0);
    expect(accepted.bytesWritten).toBe(400);
    expect(Buffer.concat(received).equals(Buffer.concat(Array.from({ length: 100 }, (_, i) => Buffer.from([0x40, 0x02, i >> 8, i & 0xff]))))).toBe(true);
  });

  it('keeps the order of every write when the kernel buffer fills and corked writes go through the Writable', async () => {
    announceSeed('socket-writes');
    const random = seededRandom(testSeed);
    const { client, accepted } = await connectedPair();
    const writer = socketWriter(accepted);
    client.pause(); // the receiver reads nothing: the sender's kernel buffer fills and a write goes asynchronous
    const sent: Buffer[] = [];
    const send = (part: Buffer): void => { sent.push(part); writer.write(part); };
    const randomPart = (i: number): Buffer => Buffer.alloc(1 + Math.floor(random() * 64_000), i & 0xff);
    for (let i = 0; writer.pendingBytes === 0; i++) {
      expect(i).toBeLessThan(10_000);
      send(randomPart(i));
    }
    for (let i = 0; i < 30; i++) {
      if (i % 7 === 3) {
        accepted.cork(); // through the Writable, behind what libuv holds
        send(randomPart(i));
        accepted.uncork();
      } else {
        send(randomPart(i)); // behind the Writable's pending bytes, or directly behind libuv's
      }
    }
    const received: Buffer[] = [];
    client.on('data', (chunk: Buffer) => received.push(chunk));
    client.resume();
    const expected = Buffer.concat(sent);
    await until(() => received.reduce((sum, chunk) => sum + chunk.length, 0) >= expected.length, 'every byte arrives');
    expect(Buffer.concat(received).equals(expected)).toBe(true);
    await until(() => writer.pendingBytes === 0, 'libuv reports every pending write done');
  });

  it('destroys the socket when a write fails (the peer reset the connection)', async () => {
    const { client, accepted } = await connectedPair();
    const writer = socketWriter(accepted);
    const errors: NodeJS.ErrnoException[] = [];
    let closed = false;
    accepted.on('error', (error: NodeJS.ErrnoException) => errors.push(error));
    accepted.on('close', () => { closed = true; });
    accepted.pause(); // no read sees the reset first: a write does
    client.resetAndDestroy();
    await until(() => {
      if (!accepted.destroyed) writer.write(Buffer.alloc(1024));
      return closed;
    }, 'the socket is destroyed and closed after a failed write');
    expect(errors.map((error) => error.syscall)).toContain('write');
  });

  it('writes any other transport through its Writable', async () => {
    const stream = new PassThrough();
    const writer = socketWriter(stream);
    expect(writer.mode).toBe('stream');
    writer.write(Buffer.from('abc'));
    expect(stream.read()?.toString()).toBe('abc');
  });
});
