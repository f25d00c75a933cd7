/**
 * FrameReader: the stateful half of frame decoding. It buffers whatever the
 * socket delivers (any split, down to one byte at a time) and hands out whole
 * frames, using the pure decoders in frame.ts and protocol-header.ts.
 *
 * Cost: each byte is copied at most once. A frame lying inside one chunk is
 * returned as a view of that chunk; a frame spanning chunks is copied once
 * into a buffer of exactly its size. Chunks are never concatenated wholesale,
 * so a large frame arriving in many small reads costs O(size), not O(size^2).
 *
 * Invariants: `buffered` equals the unconsumed bytes of chunks[head..];
 * `headOffset < chunks[head].length` whenever a chunk is live. After a decode
 * error the stream cannot be resynchronised, so the error is sticky: every
 * later call throws it again and the connection must close.
 */
import { assert } from '../../../assert.js';
import { AmqpCodecError } from './errors.js';
import { checkFrameEnd, checkFrameHeader, checkFrameMax, decodeFrame, decodeFrameHeader, NEED_MORE, type Frame, type NeedMore } from './frame.js';
import { checkProtocolHeader, type ProtocolHeaderCheck } from './protocol-header.js';
import { FRAME_HEADER_BYTES, FRAME_MIN_SIZE_BYTES, FRAME_OVERHEAD_BYTES, PROTOCOL_HEADER, type FrameType } from './spec.js';

/** Consumed chunk slots are compacted away once this many accumulate. */
const DEAD_CHUNK_SLOTS_MAX = 1024;

export class FrameReader {
  private chunks: (Buffer | undefined)[] = [];
  private head = 0;
  private headOffset = 0;
  private buffered = 0;
  private frameMax: number;
  /** Size of the frame whose header was already validated, so it is not re-read per chunk. */
  private pendingFrameBytes = 0;
  private failure: AmqpCodecError | undefined;

  /** Until connection.tune-ok, frames up to the spec minimum (4096 bytes) are accepted. */
  constructor(frameMax: number = FRAME_MIN_SIZE_BYTES) {
    checkFrameMax(frameMax);
    this.frameMax = frameMax;
  }

  /** Applies the frame-max agreed in connection.tune-ok to the frames that follow. */
  setFrameMax(frameMax: number): void {
    checkFrameMax(frameMax);
    this.frameMax = frameMax;
  }

  get bufferedBytes(): number {
    return this.buffered;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
  }

  /** Reads the client's protocol header; call until it is no longer NEED_MORE, before any frame. */
  readProtocolHeader(): ProtocolHeaderCheck | NeedMore {
    const result = checkProtocolHeader(this.peek(Math.min(this.buffered, PROTOCOL_HEADER.length)));
    if (result !== NEED_MORE && result.accepted) this.consume(result.bytesConsumed);
    return result;
  }

  /** The next whole frame, or NEED_MORE. Throws AmqpFrameError (501) on a malformed stream. */
  readFrame(): Frame | NeedMore {
    if (this.failure !== undefined) throw this.failure;
    try {
      return this.readFrameUnchecked();
    } catch (error: unknown) {
      if (error instanceof AmqpCodecError) this.failure = error;
      throw error;
    }
  }

  private readFrameUnchecked(): Frame | NeedMore {
    const inChunk = this.readFrameInHeadChunk();
    if (inChunk !== undefined) return inChunk;
    if (this.pendingFrameBytes === 0) {
      if (this.buffered < FRAME_HEADER_BYTES) return NEED_MORE;
      const header = decodeFrameHeader(this.peek(FRAME_HEADER_BYTES), 0, this.frameMax);
      this.pendingFrameBytes = header.payloadBytes + FRAME_OVERHEAD_BYTES;
    }
    if (this.buffered < this.pendingFrameBytes) return NEED_MORE;
    const frameBytes = this.peek(this.pendingFrameBytes);
    const decoded = decodeFrame(frameBytes, 0, this.frameMax);
    assert(decoded !== NEED_MORE && decoded.bytesConsumed === frameBytes.length, 'whole frame decoded');
    this.consume(decoded.bytesConsumed);
    this.pendingFrameBytes = 0;
    return decoded.frame;
  }

  /**
   * The common case: the next frame lies whole inside the head chunk (a
   * socket read holds many small frames). Decoded in place, with one view for
   * the payload and no intermediate header or result objects. Undefined when
   * the frame spans chunks or is incomplete; the general path takes over and
   * the header checked here is not re-read (pendingFrameBytes).
   */
  private readFrameInHeadChunk(): Frame | undefined {
    if (this.pendingFrameBytes !== 0) return undefined;
    const chunk = this.chunks[this.head];
    if (chunk === undefined) return undefined;
    const offset = this.headOffset;
    if (chunk.length - offset < FRAME_HEADER_BYTES) return undefined;
    const frameBytes = checkFrameHeader(chunk, offset, this.frameMax) + FRAME_OVERHEAD_BYTES;
    if (chunk.length - offset < frameBytes) {
      this.pendingFrameBytes = frameBytes;
      return undefined;
    }
    const endAt = offset + frameBytes - 1;
    checkFrameEnd(chunk, endAt);
    const frame: Frame = { type: chunk[offset] as FrameType, channel: chunk.readUInt16BE(offset + 1), payload: chunk.subarray(offset + FRAME_HEADER_BYTES, endAt) };
    this.consume(frameBytes);
    return frame;
  }

  /** The first `count` buffered bytes: a view when they lie in one chunk, else one copy. */
  private peek(count: number): Buffer {
    assert(count <= this.buffered, 'peek within buffered bytes');
    const first = this.chunks[this.head];
    if (first === undefined) return Buffer.alloc(0);
    if (first.length - this.headOffset >= count) return first.subarray(this.headOffset, this.headOffset + count);
    const copy = Buffer.allocUnsafe(count);
    let copied = 0;
    let offset = this.headOffset;
    for (let index = this.head; copied < count; index++) {
      const chunk = this.chunks[index]!;
      copied += chunk.copy(copy, copied, offset, Math.min(chunk.length, offset + count - copied));
      offset = 0;
    }
    return copy;
  }

  private consume(count: number): void {
    assert(count <= this.buffered, 'consume within buffered bytes');
    this.buffered -= count;
    let remaining = count;
    while (remaining > 0) {
      const chunk = this.chunks[this.head]!;
      const available = chunk.length - this.headOffset;
      if (remaining < available) {
        this.headOffset += remaining;
        return;
      }
      remaining -= available;
      this.chunks[this.head] = undefined; // release the chunk's memory now
      this.head++;
      this.headOffset = 0;
    }
    this.compact();
  }

  private compact(): void {
    if (this.head === this.chunks.length) {
      this.chunks = [];
      this.head = 0;
    } else if (this.head > DEAD_CHUNK_SLOTS_MAX) {
      this.chunks = this.chunks.slice(this.head);
      this.head = 0;
    }
  }
}
