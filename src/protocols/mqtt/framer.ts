/**
 * The MQTT framer: cuts a TCP byte stream into whole packets, one at a time.
 *
 * Every MQTT control packet starts with a fixed header:
 *
 *   byte 0        byte 1 … at most byte 4             then
 *   ┌──────────┐  ┌───────────────────────────────┐  ┌──────────────────────┐
 *   │type│flags│  │remaining length (7 bits/byte, │  │ variable header and  │
 *   │ 4b │ 4b  │  │ high bit = more bytes follow) │  │ payload: that length │
 *   └──────────┘  └───────────────────────────────┘  └──────────────────────┘
 *
 * The framer reads only the fixed header and knows nothing of packet types
 * (codec.ts decodes a whole packet). It checks the remaining length against
 * packetBytesMax *before* buffering the body, so a client announcing a huge
 * packet is refused after at most five bytes, not after we have buffered it.
 *
 * Invariants: `next()` yields packets in stream order, each exactly one whole
 * packet (header included); bytes after an error are never looked at again.
 * A packet that arrives inside one chunk is yielded as a view of that chunk
 * (no copy); only a packet split across chunks is concatenated, once. A chunk
 * that was only lent (socket-reads.ts) may be pushed: `ownHeldBytes()` then
 * copies what is still held of it before its buffer is reused.
 */
import { assert } from '../../assert.js';

/** The remaining length is at most four bytes long [MQTT-2.2.3]. */
const remainingLengthFieldBytesMax = 4;

export type FrameResult =
  | { readonly kind: 'packet'; readonly bytes: Buffer }
  | { readonly kind: 'need-more' }
  | { readonly kind: 'malformed'; readonly reason: string }
  | { readonly kind: 'too-large'; readonly packetBytes: number };

export type FixedHeader =
  | { readonly kind: 'header'; readonly headerBytes: number; readonly remainingLength: number }
  | { readonly kind: 'need-more' }
  | { readonly kind: 'malformed'; readonly reason: string };

const needMore = { kind: 'need-more' } as const;
/** What `head` is when every byte read was yielded: one buffer for every framer, never written to. */
const noBytes = Buffer.alloc(0);

/**
 * Pure: decodes the fixed header at `offset`, or says that more bytes are
 * needed, or that the remaining length is malformed (a fifth length byte).
 */
export function readFixedHeader(buffer: Uint8Array, offset: number): FixedHeader {
  let remainingLength = 0;
  let multiplier = 1;
  for (let index = 0; index < remainingLengthFieldBytesMax; index++) {
    const byte = buffer[offset + 1 + index];
    if (byte === undefined) return needMore;
    remainingLength += (byte & 0x7f) * multiplier;
    if ((byte & 0x80) === 0) {
      return { kind: 'header', headerBytes: 2 + index, remainingLength };
    }
    multiplier *= 128;
  }
  return { kind: 'malformed', reason: 'remaining length longer than four bytes [MQTT-2.2.3]' };
}

export class PacketFramer {
  /** Bytes not yet yielded; a complete packet inside it is yielded as a view. */
  private head: Buffer = noBytes;
  /** While a packet larger than `head` is being collected: its parts and its total size. */
  private parts: Buffer[] = [];
  private partsBytes = 0;
  private packetBytes = 0;
  private failed = false;

  constructor(private readonly packetBytesMax: number) {
    assert(packetBytesMax >= 2, 'packetBytesMax must allow at least a fixed header');
  }

  /** Bytes held for packets not yet yielded (for tests and metrics). */
  get bufferedBytes(): number {
    return this.head.length + this.partsBytes;
  }

  /** The first byte (type and flags) of the next packet, as soon as it has arrived. */
  peekFirstByte(): number | undefined {
    return this.packetBytes > 0 ? this.parts[0]?.[0] : this.head[0];
  }

  push(chunk: Buffer): void {
    assert(!this.failed, 'PacketFramer.push after a framing error');
    if (chunk.length === 0) return;
    if (this.packetBytes > 0) {
      this.parts.push(chunk);
      this.partsBytes += chunk.length;
    } else if (this.head.length === 0) {
      this.head = chunk;
    } else {
      // Only a partial fixed header (at most four bytes) can be left over here.
      this.head = Buffer.concat([this.head, chunk]);
    }
  }

  /**
   * Copies what is held of `lent` (the last chunk pushed) into memory of its own: the caller is about to
   * reuse its buffer. Only views of that buffer are copied: bytes already joined into a buffer of the
   * framer's own, and chunks that were never lent ('data' events), stay as they are. Earlier chunks were
   * made safe the same way after their own read.
   */
  ownHeldBytes(lent: Buffer): void {
    // After most reads nothing is held: no buffer to compare (a typed array's `buffer` is a slow load in V8).
    if (this.head.length === 0 && this.parts.length === 0) return;
    const reused = lent.buffer;
    if (this.head.length > 0 && this.head.buffer === reused) this.head = Buffer.from(this.head);
    const last = this.parts.length - 1;
    if (last >= 0 && this.parts[last]!.buffer === reused) this.parts[last] = Buffer.from(this.parts[last]!);
  }

  /** The next whole packet, or need-more, or a framing error (after which the stream is dead). */
  next(): FrameResult {
    if (this.failed) return { kind: 'malformed', reason: 'stream already failed' };
    if (this.packetBytes > 0) return this.nextCollected();
    if (this.head.length === 0) return needMore;
    const header = readFixedHeader(this.head, 0);
    if (header.kind === 'need-more') return needMore;
    if (header.kind === 'malformed') {
      this.failed = true;
      return header;
    }
    const packetBytes = header.headerBytes + header.remainingLength;
    if (packetBytes > this.packetBytesMax) {
      this.failed = true;
      return { kind: 'too-large', packetBytes };
    }
    if (this.head.length === packetBytes) {
      // The read held exactly this packet (a sequential client's every read): yielded as it is, no views made.
      const bytes = this.head;
      this.head = noBytes;
      return { kind: 'packet', bytes };
    }
    if (this.head.length > packetBytes) {
      const bytes = this.head.subarray(0, packetBytes);
      this.head = this.head.subarray(packetBytes);
      return { kind: 'packet', bytes };
    }
    // The body is not all here: collect chunks until it is, then concatenate once.
    this.packetBytes = packetBytes;
    this.parts = [this.head];
    this.partsBytes = this.head.length;
    this.head = noBytes;
    return needMore;
  }

  private nextCollected(): FrameResult {
    if (this.partsBytes < this.packetBytes) return needMore;
    const all = this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts, this.partsBytes);
    const bytes = all.subarray(0, this.packetBytes);
    this.head = all.subarray(this.packetBytes);
    this.parts = [];
    this.partsBytes = 0;
    this.packetBytes = 0;
    return { kind: 'packet', bytes };
  }
}
