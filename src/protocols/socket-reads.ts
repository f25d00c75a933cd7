/**
 * How a connection receives its socket's bytes. A plain TCP socket is read
 * the way Node's client sockets read with the `onread` option: libuv reads
 * into one buffer, and a callback gets the byte count, without the Readable
 * stream in between. The 'data' path, which every other transport (TLS,
 * WebSocket streams, test doubles) keeps, pays per read for a fresh 64 KiB
 * ArrayBuffer from the allocator, the Readable's push and its event, and a
 * nextTick (maybeReadMore) — per round trip of a sequential client, part of
 * what separates a Node broker from Mosquitto (issue 18).
 *
 * Node 20 has `onread` only for client sockets (net.connect); an accepted
 * socket gets it here through the same two steps the Socket constructor takes
 * with that option: the socket's own kBuffer and kBufferCb fields, and
 * `useUserBuffer` on its handle. Where either is missing (another Node, a
 * socket that already reads elsewhere) it falls back to 'data'.
 *
 * Two contracts. `receiveSocketBytes`: each chunk handed to `receive` is its
 * own copy, as with 'data'. `lendSocketBytes`: a chunk read directly is a view
 * of the read buffer, which every socket shares and the next read overwrites:
 * the receiver copies whatever it keeps past the call (one copy of a leftover
 * instead of one of every read, issue 18). Either way nothing may keep a view
 * of the read buffer past the callback.
 */
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';

/** The most one read takes, as libuv's own default for a stream read (64 KiB). */
const readBytesMax = 64 * 1024;
/** Shared by every socket read directly: each read is copied out before its callback returns. */
const readBuffer = Buffer.allocUnsafe(readBytesMax);

/**
 * The last view of the read buffer lent: a read of the same length (a sequential client's every read) is lent
 * it again, the same bytes of the same buffer, instead of a new one (Node's Buffer#subarray reads `buffer` and
 * `byteOffset` through V8's generic property load and makes an object: ~600 instructions a read, issue 18).
 */
let lent = readBuffer.subarray(0, 0);

function lentView(bytes: number): Buffer {
  if (lent.length !== bytes) lent = readBuffer.subarray(0, bytes);
  return lent;
}

/** Whether `chunk` is the view a direct read lends now (or lent last): a view of the shared read buffer, which lives anyway. */
export function isLentView(chunk: Buffer): boolean {
  return chunk === lent;
}

export type SocketReadMode = 'direct' | 'data-events';

interface UserBufferHandle {
  useUserBuffer(buffer: Uint8Array): void;
}

/** Hands every chunk the transport reads to `receive`, in order, each its own copy; says which path it took. */
export function receiveSocketBytes(transport: Duplex, receive: (chunk: Buffer) => void): SocketReadMode {
  if (readDirectly(transport, receive, true)) return 'direct';
  transport.on('data', receive);
  return 'data-events';
}

/**
 * Hands every chunk the transport reads to `receive`, in order; a chunk read directly is only lent:
 * valid until `receive` returns. Says which path it took.
 */
export function lendSocketBytes(transport: Duplex, receive: (chunk: Buffer) => void): SocketReadMode {
  if (readDirectly(transport, receive, false)) return 'direct';
  transport.on('data', receive);
  return 'data-events';
}

function readDirectly(transport: Duplex, receive: (chunk: Buffer) => void, copy: boolean): boolean {
  if (!(transport instanceof Socket) || transport instanceof TLSSocket) return false;
  if (transport.listenerCount('data') > 0 || transport.destroyed) return false;
  const handle = (transport as unknown as { _handle?: Partial<UserBufferHandle> | null })._handle;
  if (handle === null || handle === undefined || typeof handle.useUserBuffer !== 'function') return false;
  const fields = transport as unknown as Record<symbol, unknown>;
  const symbolNamed = (name: string): symbol | undefined => Object.getOwnPropertySymbols(transport).find((symbol) => symbol.description === name);
  const bufferField = symbolNamed('kBuffer');
  const callbackField = symbolNamed('kBufferCb');
  // Set by the constructor to null unless the socket already reads into a buffer of its own.
  if (bufferField === undefined || callbackField === undefined || fields[bufferField] !== null || fields[callbackField] !== null) return false;
  fields[bufferField] = readBuffer;
  fields[callbackField] = copy
    ? (bytes: number): void => {
      const chunk = Buffer.allocUnsafe(bytes);
      readBuffer.copy(chunk, 0, 0, bytes);
      receive(chunk);
    }
    : (bytes: number): void => receive(lentView(bytes));
  (handle as UserBufferHandle).useUserBuffer(readBuffer);
  // What attaching a 'data' listener does: the stream flows, so the end of the stream is still emitted.
  transport.resume();
  return true;
}
