/**
 * The packets a connection wrote in this tick, handed to its socket at once:
 * one `socket.write` of one buffer, never a cork. A corked Node socket keeps
 * an object per written chunk and gives them to the kernel through writev at
 * uncork; a sequential PUBLISH/PUBACK round trip paid that for a single
 * four-byte PUBACK. Several small packets (the PUBACKs of a pipelined read) are
 * copied into one buffer; past `concatBytesMax` they go as they are, corked,
 * so a large delivery is not copied again.
 *
 * A plain TCP socket's writes skip its Writable when it holds nothing
 * (socket-writes.ts).
 *
 * Invariant: packets reach the socket in the order they were added, and
 * nothing is added to the socket by anyone else (the connection writes only
 * through here), so the stream order is the order of `add`.
 */
import type { Writable } from 'node:stream';
import { socketWriter, type SocketWriter } from '../socket-writes.js';

/** Up to this many bytes, the tick's packets are copied into one buffer; more go as one writev. */
const concatBytesMax = 16 * 1024;

export class OutgoingPackets {
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

  /** Keeps a packet for the next flush; true when it is the first since the last flush (the caller schedules one). */
  add(packet: Buffer): boolean {
    this.packets.push(packet);
    this.pendingBytes += packet.length;
    return this.packets.length === 1;
  }

  /** Hands every kept packet to the socket, in order; false when there was none. */
  flush(): boolean {
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
