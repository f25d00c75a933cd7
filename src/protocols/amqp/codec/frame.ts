/**
 * The AMQP 0-9-1 frame format (spec 4.2.3) as a pure codec: bytes in, a frame
 * and the bytes it used out, or NEED_MORE, or a typed AmqpFrameError (501).
 * Buffering of partial socket reads lives in frame-reader.ts.
 *
 *   0      1         3             7                  7+size   8+size
 *   +------+---------+-------------+------------------+--------+
 *   | type | channel | size (long) | payload (size B) |  0xCE  |
 *   +------+---------+-------------+------------------+--------+
 *
 * `frameMax` is the negotiated frame-max: the largest whole frame, header and
 * frame-end included ("frame-max" in connection.tune). A frame whose header
 * announces more is rejected as soon as the 7 header bytes are in, so a peer
 * cannot make us buffer up to 4 GiB.
 *
 * Decoded payloads are views into the input (no copy on the hot path):
 * whoever keeps one longer than the input buffer should copy it.
 */
import { assert } from '../../../assert.js';
import { ByteWriter } from './byte-writer.js';
import { AmqpFrameError, CODEC_ERROR_CODE, encodeInvalid } from './errors.js';
import {
  FRAME_END,
  FRAME_HEADER_BYTES,
  FRAME_MIN_SIZE_BYTES,
  FRAME_OVERHEAD_BYTES,
  FRAME_SIZE_MAX_BYTES,
  FRAME_TYPE,
  type FrameType,
} from './spec.js';

export interface Frame {
  readonly type: FrameType;
  readonly channel: number;
  readonly payload: Buffer;
}

export interface DecodedFrame {
  readonly frame: Frame;
  readonly bytesConsumed: number;
}

export interface FrameHeader {
  readonly type: FrameType;
  readonly channel: number;
  readonly payloadBytes: number;
}

/** Returned when the input holds only the beginning of a frame. */
export const NEED_MORE: unique symbol = Symbol('NEED_MORE');
export type NeedMore = typeof NEED_MORE;

const FRAME_TYPES: ReadonlySet<number> = new Set(Object.values(FRAME_TYPE));

/** frame-max must allow at least the spec's minimum frame and fit the 32-bit size field. */
export function checkFrameMax(frameMax: number): void {
  assert(
    Number.isInteger(frameMax) && frameMax >= FRAME_MIN_SIZE_BYTES && frameMax <= FRAME_SIZE_MAX_BYTES,
    `frameMax ${frameMax} outside [${FRAME_MIN_SIZE_BYTES}, ${FRAME_SIZE_MAX_BYTES}]`,
  );
}

/**
 * Validates the 7 header bytes at `offset` (the caller guarantees they are
 * there). Everything that can be judged before the payload arrives is judged
 * here: type, size against frameMax, and the heartbeat rules.
 */
export function decodeFrameHeader(bytes: Buffer, offset: number, frameMax: number): FrameHeader {
  const payloadBytes = checkFrameHeader(bytes, offset, frameMax);
  return { type: bytes[offset] as FrameType, channel: bytes.readUInt16BE(offset + 1), payloadBytes };
}

/**
 * decodeFrameHeader without the object: validates the 7 header bytes at
 * `offset` and returns the payload size. The frame reader's hot path reads
 * type and channel straight from the bytes.
 */
export function checkFrameHeader(bytes: Buffer, offset: number, frameMax: number): number {
  assert(bytes.length - offset >= FRAME_HEADER_BYTES, 'decodeFrameHeader needs 7 bytes');
  const type = bytes[offset]!;
  if (!FRAME_TYPES.has(type)) {
    throw new AmqpFrameError(CODEC_ERROR_CODE.FRAME_TYPE_UNKNOWN, `unknown frame type ${type}`);
  }
  const payloadBytes = bytes.readUInt32BE(offset + 3);
  if (payloadBytes > frameMax - FRAME_OVERHEAD_BYTES) {
    throw new AmqpFrameError(
      CODEC_ERROR_CODE.FRAME_TOO_LARGE,
      `frame of ${payloadBytes + FRAME_OVERHEAD_BYTES} bytes exceeds frame-max ${frameMax}`,
    );
  }
  // Spec 4.2.7: "Heartbeat frames MUST have a channel number of zero. A peer that
  // receives an invalid heartbeat frame MUST raise a connection exception with
  // reply code 501 (frame error)." A heartbeat also carries no payload.
  if (type === FRAME_TYPE.HEARTBEAT) {
    const channel = bytes.readUInt16BE(offset + 1);
    if (channel !== 0 || payloadBytes !== 0) {
      throw new AmqpFrameError(
        CODEC_ERROR_CODE.HEARTBEAT_INVALID,
        `heartbeat frame on channel ${channel} with ${payloadBytes} payload bytes`,
      );
    }
  }
  return payloadBytes;
}

/** The frame-end octet at `endAt` must be 0xCE (spec 4.2.3); anything else means the stream lost sync. */
export function checkFrameEnd(bytes: Buffer, endAt: number): void {
  if (bytes[endAt] !== FRAME_END) {
    throw new AmqpFrameError(
      CODEC_ERROR_CODE.FRAME_END_INVALID,
      `frame-end octet is 0x${bytes[endAt]!.toString(16)}, expected 0xce`,
    );
  }
}

/** Decodes the frame starting at `offset`. Throws AmqpFrameError (501) on malformed input. */
export function decodeFrame(bytes: Buffer, offset: number, frameMax: number): DecodedFrame | NeedMore {
  checkFrameMax(frameMax);
  assert(offset >= 0 && offset <= bytes.length, 'decodeFrame offset out of range');
  if (bytes.length - offset < FRAME_HEADER_BYTES) return NEED_MORE;
  const header = decodeFrameHeader(bytes, offset, frameMax);
  const frameBytes = header.payloadBytes + FRAME_OVERHEAD_BYTES;
  if (bytes.length - offset < frameBytes) return NEED_MORE;
  const endAt = offset + frameBytes - 1;
  checkFrameEnd(bytes, endAt);
  const payload = bytes.subarray(offset + FRAME_HEADER_BYTES, endAt);
  return { frame: { type: header.type, channel: header.channel, payload }, bytesConsumed: frameBytes };
}

function checkChannel(channel: number): void {
  if (!Number.isInteger(channel) || channel < 0 || channel > 0xffff) {
    throw encodeInvalid(`channel ${channel} is not a 16-bit channel number`);
  }
}

/**
 * Appends one frame to `writer`, letting `writePayload` write the payload in
 * place (no intermediate buffer); the size field is patched afterwards.
 */
export function writeFrame(
  writer: ByteWriter,
  type: FrameType,
  channel: number,
  writePayload: (writer: ByteWriter) => void,
): void {
  checkChannel(channel);
  writer.octet(type);
  writer.short(channel);
  const sizeAt = writer.reserveLong();
  const start = writer.length;
  writePayload(writer);
  writer.patchLong(sizeAt, writer.length - start, 'frame size');
  writer.octet(FRAME_END);
}

/** Encodes one frame around an already encoded payload. */
export function encodeFrame(type: FrameType, channel: number, payload: Uint8Array): Buffer {
  checkChannel(channel);
  if (payload.length > FRAME_SIZE_MAX_BYTES - FRAME_OVERHEAD_BYTES) {
    throw encodeInvalid(`payload of ${payload.length} bytes does not fit a frame`);
  }
  const frame = Buffer.allocUnsafe(payload.length + FRAME_OVERHEAD_BYTES);
  frame[0] = type;
  frame.writeUInt16BE(channel, 1);
  frame.writeUInt32BE(payload.length, 3);
  frame.set(payload, FRAME_HEADER_BYTES);
  frame[frame.length - 1] = FRAME_END;
  return frame;
}

/** A heartbeat frame (spec 4.2.7): type 8, channel 0, no payload. */
export function encodeHeartbeatFrame(): Buffer {
  return encodeFrame(FRAME_TYPE.HEARTBEAT, 0, Buffer.alloc(0));
}
