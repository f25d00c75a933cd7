/**
 * The packets a connection wrote in this tick, handed to its socket at once:
 * one `socket.write` of one buffer, never a cork. A corked Node socket keeps
 * an object per written chunk and gives them to the kernel through writev at
 * uncork; a sequential PUBLISH/PUBACK round trip paid that for a single
 * four-byte PUBACK. Several small packets (the PUBACKs of a pipelined read) are
 * copied into one buffer; past `concatBytesMax` they go as they are, corked,
 * so a large delivery is not copied again.
 *
 * Deliveries are written in place (`reserve`, a PacketSpace): into one buffer
 * shared by every connection, each taking the bytes after the last one taken.
 * While one connection reserves in turn, its packets are one run of that
 * buffer, handed to the socket as one piece; when another connection reserves
 * (a fan-out), adds a packet of its own or flushes, the run ends and becomes
 * one of its packets. A PUBLISH then costs no buffer of its own, and a tick's
 * deliveries to one subscriber no copy into one. Bytes once reserved are never
 * reserved again (a full buffer is replaced, not reused): the socket, or libuv,
 * may hold them until the kernel takes them.
 *
 * A plain TCP socket's writes skip its Writable when it holds nothing
 * (socket-writes.ts).
 *
 * Invariant: packets reach the socket in the order they were added or
 * reserved, and nothing is added to the socket by anyone else (the connection
 * writes only through here), so the stream order is the order of those calls.
 */
import { Buffer } from 'node:buffer';
import type { Writable } from 'node:stream';
import { socketWriter, type SocketWriter } from '../socket-writes.js';
import type { PacketSpace } from './codec.js';

/** Up to this many bytes, the tick's packets are copied into one buffer; more go as one writev. */
const concatBytesMax = 16 * 1024;

/** The shared buffer's size (a larger packet gets a buffer of its size). */
const sharedBufferBytes = 64 * 1024;

/** The buffer deliveries are written into: the bytes before `end` are taken; `owner`'s run starts at `runStart`. */
const shared = { buffer: Buffer.allocUnsafeSlow(0), end: 0, owner: undefined as OutgoingPackets | undefined, runStart: 0 };

export class OutgoingPackets implements PacketSpace {
  private packets: Buffer[] = [];
  private pendingBytes = 0;

  private readonly writer: SocketWriter;

  constructor(private readonly socket: Writable) {
    this.writer = socketWriter(socket);
  }

  /** The socket writer: which path its writes take, how many went directly. */
  get socketWriter(): SocketWriter {
    return this.writer;
  }

  /** Bytes added and not yet handed to the socket, and those written directly that the kernel has not taken yet (they count towards its congestion). */
  get bytes(): number {
    return this.pendingBytes + this.writer.pendingBytes;
  }

  /** Nothing added or reserved since the last flush. */
  get isEmpty(): boolean {
    return this.pendingBytes === 0;
  }

  /** Keeps a packet for the next flush; true when it is the first since the last flush (the caller schedules one). */
  add(packet: Buffer): boolean {
    const first = this.pendingBytes === 0;
    this.endRun();
    this.packets.push(packet);
    this.pendingBytes += packet.length;
    return first;
  }

  /** PacketSpace: `length` bytes of `buffer` for the next flush, at the offset returned, to be filled now. */
  reserve(length: number): number {
    if (shared.owner !== this || shared.end + length > shared.buffer.length) this.startRun(length);
    const at = shared.end;
    shared.end = at + length;
    this.pendingBytes += length;
    return at;
  }

  /** The shared buffer: valid after reserve. */
  get buffer(): Buffer {
    return shared.buffer;
  }

  private startRun(length: number): void {
    shared.owner?.endRun();
    if (shared.end + length > shared.buffer.length) {
      shared.buffer = Buffer.allocUnsafeSlow(Math.max(sharedBufferBytes, length));
      shared.end = 0;
    }
    shared.owner = this;
    shared.runStart = shared.end;
  }

  /** This connection's run in the shared buffer, if it has one, becomes its next packet. */
  private endRun(): void {
    if (shared.owner !== this) return;
    if (shared.end > shared.runStart) this.packets.push(shared.buffer.subarray(shared.runStart, shared.end));
    shared.owner = undefined;
  }

  /** Hands every kept packet to the socket, in order; false when there was none. */
  flush(): boolean {
    this.endRun();
    const packets = this.packets;
    const count = packets.length;
    if (count === 0) return false;
    const bytes = this.pendingBytes;
    this.packets = [];
    this.pendingBytes = 0;
    const socket = this.socket;
    if (socket.destroyed || socket.writableEnded) return false;
    if (count === 1) {
      this.writer.write(packets[0]!);
    } else if (bytes <= concatBytesMax) {
      this.writer.write(Buffer.concat(packets, bytes));
    } else {
      socket.cork();
      for (const packet of packets) socket.write(packet);
      socket.uncork();
    }
    return true;
  }
}
