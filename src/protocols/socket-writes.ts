/**
 * How a connection hands its bytes to its socket. A plain TCP socket with
 * nothing queued in its Writable is written straight through its libuv
 * handle, the call Node's own write makes at the end of its path: the
 * Writable's state machine, a WriteWrap object per write and the nextTick
 * (afterWrite) that follows every write are skipped — per PUBACK of a
 * sequential client, part of what separates a Node broker from Mosquitto
 * (issue 18). When the kernel takes the bytes at once (the common case) the
 * one request object is reused; when it takes only part, libuv keeps the rest
 * in its own queue and the request stays with it until its completion.
 *
 * The handle's `writeBuffer` needs a request made by Node's WriteWrap
 * constructor, which only `process.binding('stream_wrap')` (an internal,
 * still on Node's allow-list) gives; where it or the handle's method is
 * missing (another Node, TLS, WebSocket, test doubles), or the Writable holds
 * bytes (a cork, a write still pending, the end), the bytes go through
 * `socket.write` as before. A direct write does not refresh the socket's idle
 * timeout (socket.setTimeout), which the connections using this do not set.
 *
 * Invariants: bytes reach the kernel in the order of `write` calls, whichever
 * path each took — libuv queues a handle write behind any it still holds,
 * and the Writable is used only when it already holds something, after which
 * its bytes come before any direct write; a buffer given here is never
 * changed afterwards by the caller (libuv may still hold it).
 */
import { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import { TLSSocket } from 'node:tls';
import { getSystemErrorName } from 'node:util';

export type SocketWriteMode = 'direct' | 'stream';

interface WriteRequest {
  handle: unknown;
  buffer: Buffer | null;
  oncomplete: ((status: number) => void) | null;
}

interface StreamWrapBinding {
  WriteWrap: new () => WriteRequest;
  streamBaseState: Int32Array;
  kLastWriteWasAsync: number;
}

interface WriteBufferHandle {
  writeBuffer(request: WriteRequest, buffer: Buffer): number;
}

/** Node's stream_wrap binding, when this Node still offers it with the fields used here. */
const streamWrap: StreamWrapBinding | undefined = (() => {
  try {
    const binding = (process as unknown as { binding(name: string): Partial<StreamWrapBinding> }).binding('stream_wrap');
    const { WriteWrap, streamBaseState, kLastWriteWasAsync } = binding;
    if (typeof WriteWrap !== 'function' || !(streamBaseState instanceof Int32Array) || typeof kLastWriteWasAsync !== 'number') return undefined;
    return { WriteWrap, streamBaseState, kLastWriteWasAsync };
  } catch {
    return undefined;
  }
})();

export interface SocketWriter {
  /** Which path writes took when the writer was made: 'direct' when the handle can be written, else 'stream'. */
  readonly mode: SocketWriteMode;
  /** Bytes written directly that the kernel has not taken yet (libuv holds them); the Writable's own are its writableLength. */
  readonly pendingBytes: number;
  /** Writes taken by the handle directly so far (for tests: the fast path must not go silently). */
  readonly directWrites: number;
  write(bytes: Buffer): void;
}

/** A writer for `transport`: direct where the transport allows it (see above), its Writable otherwise. */
export function socketWriter(transport: Writable): SocketWriter {
  const handleOf = (): Partial<WriteBufferHandle> | null | undefined => (transport as unknown as { _handle?: Partial<WriteBufferHandle> | null })._handle;
  const initial = handleOf();
  if (streamWrap === undefined || !(transport instanceof Socket) || transport instanceof TLSSocket || typeof initial?.writeBuffer !== 'function') {
    return { mode: 'stream', pendingBytes: 0, directWrites: 0, write: (bytes) => { transport.write(bytes); } };
  }
  return new DirectSocketWriter(transport, streamWrap, handleOf);
}

class DirectSocketWriter implements SocketWriter {
  readonly mode = 'direct';
  pendingBytes = 0;
  directWrites = 0;
  /** The request of the last write the kernel took at once: free to be used again. */
  private spare: WriteRequest | undefined;

  constructor(
    private readonly socket: Socket,
    private readonly binding: StreamWrapBinding,
    private readonly handleOf: () => Partial<WriteBufferHandle> | null | undefined,
  ) {}

  write(bytes: Buffer): void {
    const socket = this.socket;
    const handle = this.handleOf();
    // Anything in the Writable (a pending or corked write, the end, a socket still connecting) keeps its order: behind it.
    if (handle === null || handle === undefined || socket.writableLength > 0 || socket.writableCorked > 0 || socket.writableEnded || socket.destroyed || socket.connecting) {
      socket.write(bytes);
      return;
    }
    const request = this.spare ?? new this.binding.WriteWrap();
    this.spare = undefined;
    request.handle = handle;
    const error = (handle as WriteBufferHandle).writeBuffer(request, bytes);
    if (error !== 0) {
      socket.destroy(writeError(error));
      return;
    }
    this.directWrites += 1;
    if (this.binding.streamBaseState[this.binding.kLastWriteWasAsync] === 0) {
      this.spare = request;
      return;
    }
    // The kernel took part of it: libuv writes the rest when it can, and calls back.
    request.buffer = bytes;
    this.pendingBytes += bytes.length;
    request.oncomplete = (status: number) => {
      this.pendingBytes -= bytes.length;
      request.buffer = null;
      if (status < 0) socket.destroy(writeError(status));
    };
  }
}

function writeError(status: number): Error {
  const code = getSystemErrorName(status);
  return Object.assign(new Error(`write ${code}`), { errno: status, code, syscall: 'write' });
}
