/**
 * The AMQP front end's typed errors, and the one function that turns any
 * error into a wire reaction (STYLE habit 5): a channel.close or a
 * connection.close with a reply code, a reply text in RabbitMQ's
 * "CODE_NAME - detail" form, and the class/method id of the offending method.
 *
 * Handlers only throw; connection.ts calls wireErrorOf and sends. Which codes:
 *   BrokerError            its code, channel or connection as the core says
 *   AmqpChannelError       406 unknown delivery tag, 540 tx/immediate, ...
 *   AmqpConnectionError    503 wrong method now, 504 channel misuse, 505 frame
 *                          out of place, 530 vhost, 403 login refused
 *   AmqpCodecError         the codec's code (501, 502, 540), always connection
 *   anything else          541 INTERNAL_ERROR on the connection (logged at error)
 * AssertionError is never caught: a broken invariant stops the process.
 */
import { AssertionError } from '../../assert.js';
import { BrokerError } from '../../core/api.js';
import { AmqpCodecError, REPLY_CODE, replyCodeName, truncateShortString, type ReplyCode } from './codec/index.js';

export interface FailedMethod {
  readonly classId: number;
  readonly methodId: number;
}

/** An error that closes one channel (a "soft error" in the spec's terms). */
export class AmqpChannelError extends Error {
  override readonly name = 'AmqpChannelError';
  constructor(
    readonly replyCode: ReplyCode,
    message: string,
  ) {
    super(message);
  }
}

/** An error that closes the whole connection (a "hard error"). */
export class AmqpConnectionError extends Error {
  override readonly name = 'AmqpConnectionError';
  constructor(
    readonly replyCode: ReplyCode,
    message: string,
  ) {
    super(message);
  }
}

/** The log refused a record the client waits for (a declare, a bind): nothing can be acknowledged any more. */
export class AmqpLogFailedError extends Error {
  override readonly name = 'AmqpLogFailedError';
  constructor(message: string, override readonly cause: unknown) {
    super(message);
  }
}

export interface WireError {
  readonly scope: 'channel' | 'connection';
  readonly replyCode: ReplyCode;
  readonly replyText: string;
  readonly classId: number;
  readonly methodId: number;
  /** Operator-relevant (the broker's fault, not the client's): logged at error, not debug. */
  readonly internal: boolean;
}

/** RabbitMQ's reply-text form, "NOT_FOUND - no queue 'x'", cut to a short string. */
export function replyText(code: ReplyCode, detail: string): string {
  const name = replyCodeName(code) ?? String(code);
  return truncateShortString(detail.startsWith(`${name} - `) ? detail : `${name} - ${detail}`);
}

/** The one mapping from errors to the wire. Throws AssertionError back: those are never handled. */
export function wireErrorOf(error: unknown, failed: FailedMethod | undefined): WireError {
  if (error instanceof AssertionError) throw error;
  const classId = failed?.classId ?? 0;
  const methodId = failed?.methodId ?? 0;
  if (error instanceof BrokerError) {
    return { scope: error.scope, replyCode: error.code, replyText: replyText(error.code, error.message), classId, methodId, internal: false };
  }
  if (error instanceof AmqpChannelError) {
    return { scope: 'channel', replyCode: error.replyCode, replyText: replyText(error.replyCode, error.message), classId, methodId, internal: false };
  }
  if (error instanceof AmqpConnectionError) {
    return { scope: 'connection', replyCode: error.replyCode, replyText: replyText(error.replyCode, error.message), classId, methodId, internal: false };
  }
  if (error instanceof AmqpCodecError) {
    // The codec knows the method it was decoding better than we do.
    const located = error.classId !== 0 ? error : { classId, methodId };
    return { scope: 'connection', replyCode: error.replyCode, replyText: replyText(error.replyCode, error.message), classId: located.classId, methodId: located.methodId, internal: error.replyCode === REPLY_CODE.INTERNAL_ERROR };
  }
  if (error instanceof AmqpLogFailedError) {
    return { scope: 'connection', replyCode: REPLY_CODE.INTERNAL_ERROR, replyText: replyText(REPLY_CODE.INTERNAL_ERROR, error.message), classId, methodId, internal: true };
  }
  const detail = error instanceof Error ? error.message : String(error);
  return { scope: 'connection', replyCode: REPLY_CODE.INTERNAL_ERROR, replyText: replyText(REPLY_CODE.INTERNAL_ERROR, detail), classId, methodId, internal: true };
}
