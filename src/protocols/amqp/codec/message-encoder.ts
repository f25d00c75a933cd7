/**
 * Encodes one outgoing message (basic.deliver, basic.get-ok, basic.return, or
 * basic.publish for test clients) as the frame sequence of spec 4.2.6:
 *
 *   method frame | content header frame | body frame ... body frame
 *
 * into a single Buffer, because the server coalesces writes: one socket write
 * per message instead of three or more. Body frames carry at most
 * frameMax - 8 bytes each; an empty body has no body frame at all (RabbitMQ
 * sends none, and every client accepts that).
 *
 * The properties go out as the raw bytes the publisher sent (see
 * content-header.ts), so the broker never re-encodes them.
 */
import { ByteWriter } from './byte-writer.js';
import { encodeInvalid } from './errors.js';
import { writeContentHeaderFrame } from './content-header.js';
import { checkFrameMax, writeFrame } from './frame.js';
import type { ContentMethodInput } from './method-types.js';
import { methodDefinition, writeMethodFrame } from './methods.js';
import { FRAME_OVERHEAD_BYTES, FRAME_TYPE } from './spec.js';

export interface OutgoingMessage {
  readonly channel: number;
  readonly method: ContentMethodInput;
  /** Property flags and property list, as received or from encodeProperties. */
  readonly rawProperties: Uint8Array;
  readonly body: Uint8Array;
}

/** Header frame fixed part: class-id, weight, body-size. */
const CONTENT_HEADER_FIXED_BYTES = 12;
/** Room for the method frame before the writer has to grow: deliver with two 255-byte names fits. */
const METHOD_FRAME_ESTIMATE_BYTES = 600;

/** Throws ENCODE_INVALID if the frame just written (from `start`) exceeds frameMax. */
function checkFrameFits(writer: ByteWriter, start: number, frameMax: number, what: string): void {
  const frameBytes = writer.length - start;
  if (frameBytes > frameMax) throw encodeInvalid(`${what} frame of ${frameBytes} bytes exceeds frame-max ${frameMax}`);
}

export function encodeMessage(message: OutgoingMessage, frameMax: number): Buffer {
  checkFrameMax(frameMax);
  const { channel, method, rawProperties, body } = message;
  const definition = methodDefinition(method.name);
  if (definition?.hasContent !== true) throw encodeInvalid(`${String(method.name)} does not carry content`);
  const bodyFrameBytesMax = frameMax - FRAME_OVERHEAD_BYTES;
  const bodyFrames = Math.ceil(body.length / bodyFrameBytesMax);
  const writer = new ByteWriter(
    METHOD_FRAME_ESTIMATE_BYTES +
      FRAME_OVERHEAD_BYTES + CONTENT_HEADER_FIXED_BYTES + rawProperties.length +
      body.length + bodyFrames * FRAME_OVERHEAD_BYTES,
  );

  writeMethodFrame(writer, channel, method);
  checkFrameFits(writer, 0, frameMax, method.name);
  const headerStart = writer.length;
  writeContentHeaderFrame(writer, channel, definition.classId, body.length, rawProperties);
  checkFrameFits(writer, headerStart, frameMax, 'content header');

  for (let offset = 0; offset < body.length; offset += bodyFrameBytesMax) {
    const part = body.subarray(offset, Math.min(offset + bodyFrameBytesMax, body.length));
    writeFrame(writer, FRAME_TYPE.BODY, channel, (payloadWriter) => payloadWriter.bytes(part));
  }
  return writer.finish();
}
