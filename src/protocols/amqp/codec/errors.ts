/**
 * The codec's typed errors. Malformed input from a peer is an operating error,
 * not a broken invariant, so it is thrown as an AmqpCodecError carrying the
 * reply code the connection layer must close with (the codec never decides how
 * to close; STYLE habit 5: one place turns errors into wire codes).
 *
 * Which reply code, as decided for Cairn (all of them close the connection):
 *   501 FRAME_ERROR      the bytes cannot be decoded: bad frame-end, unknown frame
 *                        type, a frame over frame-max, a length running past its
 *                        container, trailing bytes, unknown field-value tag. This
 *                        is what RabbitMQ answers for "cannot decode" too.
 *   502 SYNTAX_ERROR     the bytes decode but a value is illegal: invalid UTF-8 in
 *                        a short string, a 64-bit number beyond 2^53-1 where Cairn
 *                        uses JS numbers, non-zero content-header weight, a
 *                        property flag that no property owns.
 *   540 NOT_IMPLEMENTED  a class id / method id pair that Cairn does not know. The
 *                        spec defines 540 as "functionality that is not implemented
 *                        in the server"; 503 COMMAND_INVALID is for known methods
 *                        sent at the wrong time, which is the connection's call.
 *   541 INTERNAL_ERROR   Cairn itself asked to encode a value that does not fit
 *                        its wire type (a 300-byte short string, a negative octet).
 */
import { REPLY_CODE, type ReplyCode } from './spec.js';

/** Machine-readable reason, finer than the reply code; stable for tests and logs. */
export const CODEC_ERROR_CODE = {
  TRUNCATED: 'TRUNCATED',
  TRAILING_BYTES: 'TRAILING_BYTES',
  FRAME_END_INVALID: 'FRAME_END_INVALID',
  FRAME_TYPE_UNKNOWN: 'FRAME_TYPE_UNKNOWN',
  FRAME_TOO_LARGE: 'FRAME_TOO_LARGE',
  HEARTBEAT_INVALID: 'HEARTBEAT_INVALID',
  FIELD_TYPE_UNKNOWN: 'FIELD_TYPE_UNKNOWN',
  NESTING_TOO_DEEP: 'NESTING_TOO_DEEP',
  UTF8_INVALID: 'UTF8_INVALID',
  VALUE_OUT_OF_RANGE: 'VALUE_OUT_OF_RANGE',
  HEADER_WEIGHT_INVALID: 'HEADER_WEIGHT_INVALID',
  PROPERTY_FLAGS_INVALID: 'PROPERTY_FLAGS_INVALID',
  METHOD_UNKNOWN: 'METHOD_UNKNOWN',
  ENCODE_INVALID: 'ENCODE_INVALID',
} as const;
export type CodecErrorCode = (typeof CODEC_ERROR_CODE)[keyof typeof CODEC_ERROR_CODE];

const REPLY_CODE_OF: Record<CodecErrorCode, ReplyCode> = {
  TRUNCATED: REPLY_CODE.FRAME_ERROR,
  TRAILING_BYTES: REPLY_CODE.FRAME_ERROR,
  FRAME_END_INVALID: REPLY_CODE.FRAME_ERROR,
  FRAME_TYPE_UNKNOWN: REPLY_CODE.FRAME_ERROR,
  FRAME_TOO_LARGE: REPLY_CODE.FRAME_ERROR,
  HEARTBEAT_INVALID: REPLY_CODE.FRAME_ERROR,
  FIELD_TYPE_UNKNOWN: REPLY_CODE.FRAME_ERROR,
  NESTING_TOO_DEEP: REPLY_CODE.FRAME_ERROR,
  UTF8_INVALID: REPLY_CODE.SYNTAX_ERROR,
  VALUE_OUT_OF_RANGE: REPLY_CODE.SYNTAX_ERROR,
  HEADER_WEIGHT_INVALID: REPLY_CODE.SYNTAX_ERROR,
  PROPERTY_FLAGS_INVALID: REPLY_CODE.SYNTAX_ERROR,
  METHOD_UNKNOWN: REPLY_CODE.NOT_IMPLEMENTED,
  ENCODE_INVALID: REPLY_CODE.INTERNAL_ERROR,
};

/** Where in the protocol the error was found, for connection.close's class-id/method-id. */
export interface CodecErrorContext {
  readonly classId?: number;
  readonly methodId?: number;
}

export class AmqpCodecError extends Error {
  override readonly name: string = 'AmqpCodecError';
  readonly replyCode: ReplyCode;
  /** Class id of the offending method, or 0 when the error is not about a method. */
  readonly classId: number;
  /** Method id of the offending method, or 0 when the error is not about a method. */
  readonly methodId: number;

  constructor(
    readonly code: CodecErrorCode,
    message: string,
    context: CodecErrorContext = {},
  ) {
    super(message);
    this.replyCode = REPLY_CODE_OF[code];
    this.classId = context.classId ?? 0;
    this.methodId = context.methodId ?? 0;
  }

  /** The same error, now knowing which method it happened in. */
  withMethod(classId: number, methodId: number): AmqpCodecError {
    if (this.classId !== 0) return this;
    const located = new AmqpCodecError(this.code, this.message, { classId, methodId });
    located.stack = this.stack ?? '';
    return located;
  }
}

/** A frame-level error: the byte stream itself is broken, so it always closes the connection. */
export class AmqpFrameError extends AmqpCodecError {
  override readonly name: string = 'AmqpFrameError';
}

export function truncated(what: string): AmqpCodecError {
  return new AmqpCodecError(CODEC_ERROR_CODE.TRUNCATED, `cannot decode ${what}: input ends too early`);
}

export function encodeInvalid(message: string): AmqpCodecError {
  return new AmqpCodecError(CODEC_ERROR_CODE.ENCODE_INVALID, message);
}
