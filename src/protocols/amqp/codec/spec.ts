/**
 * AMQP 0-9-1 constants as RabbitMQ implements them: frame types, the frame-end
 * octet, the protocol header, class and method ids, and reply codes with the
 * scope (channel or connection) the spec assigns to each.
 *
 * Source: amqp0-9-1.extended.xml (the <constant> and <class>/<method> index
 * attributes) and RabbitMQ's errata for 0-9-1. Everything here is data; the
 * codecs import it so that every magic number lives in exactly one place.
 */

/** Frame type octets, spec section 4.2.3 ("frame-method", "frame-header", ...). */
export const FRAME_TYPE = {
  METHOD: 1,
  HEADER: 2,
  BODY: 3,
  HEARTBEAT: 8,
} as const;
export type FrameType = (typeof FRAME_TYPE)[keyof typeof FRAME_TYPE];

/** Every frame ends with this octet; anything else is a frame error (spec 4.2.3). */
export const FRAME_END = 0xce;

/** type (1) + channel (2) + payload size (4). */
export const FRAME_HEADER_BYTES = 7;

/** Header plus the frame-end octet: what a frame costs on top of its payload. */
export const FRAME_OVERHEAD_BYTES = FRAME_HEADER_BYTES + 1;

/**
 * The smallest frame-max a peer may negotiate ("frame-min-size" in the XML).
 * Frames of this size must be accepted before connection.tune-ok is received.
 */
export const FRAME_MIN_SIZE_BYTES = 4096;

/** The largest value a 32-bit frame size (and frame-max) can express. */
export const FRAME_SIZE_MAX_BYTES = 0xffff_ffff;

/**
 * 'AMQP' 0 0 9 1: the only protocol header Cairn accepts (spec 4.2.2).
 * Shared by every connection, so never mutate it; hand out copies.
 */
export const PROTOCOL_HEADER: Buffer = Buffer.from([0x41, 0x4d, 0x51, 0x50, 0x00, 0x00, 0x09, 0x01]);

/** Class ids ("index" attributes of <class> in the XML). */
export const CLASS_ID = {
  CONNECTION: 10,
  CHANNEL: 20,
  EXCHANGE: 40,
  QUEUE: 50,
  BASIC: 60,
  CONFIRM: 85,
  TX: 90,
} as const;
export type ClassId = (typeof CLASS_ID)[keyof typeof CLASS_ID];

/**
 * Method ids per class ("index" attributes of <method>). Ids are only unique
 * within a class, hence one object per class. RabbitMQ extensions are marked.
 */
export const METHOD_ID = {
  CONNECTION: {
    START: 10,
    START_OK: 11,
    SECURE: 20,
    SECURE_OK: 21,
    TUNE: 30,
    TUNE_OK: 31,
    OPEN: 40,
    OPEN_OK: 41,
    CLOSE: 50,
    CLOSE_OK: 51,
    BLOCKED: 60, // RabbitMQ extension
    UNBLOCKED: 61, // RabbitMQ extension
    UPDATE_SECRET: 70, // RabbitMQ extension
    UPDATE_SECRET_OK: 71, // RabbitMQ extension
  },
  CHANNEL: {
    OPEN: 10,
    OPEN_OK: 11,
    FLOW: 20,
    FLOW_OK: 21,
    CLOSE: 40,
    CLOSE_OK: 41,
  },
  EXCHANGE: {
    DECLARE: 10,
    DECLARE_OK: 11,
    DELETE: 20,
    DELETE_OK: 21,
    BIND: 30, // RabbitMQ extension (exchange-to-exchange bindings)
    BIND_OK: 31,
    UNBIND: 40,
    UNBIND_OK: 51, // 51, not 41: RabbitMQ's id, kept by every client
  },
  QUEUE: {
    DECLARE: 10,
    DECLARE_OK: 11,
    BIND: 20,
    BIND_OK: 21,
    PURGE: 30,
    PURGE_OK: 31,
    DELETE: 40,
    DELETE_OK: 41,
    UNBIND: 50,
    UNBIND_OK: 51,
  },
  BASIC: {
    QOS: 10,
    QOS_OK: 11,
    CONSUME: 20,
    CONSUME_OK: 21,
    CANCEL: 30,
    CANCEL_OK: 31,
    PUBLISH: 40,
    RETURN: 50,
    DELIVER: 60,
    GET: 70,
    GET_OK: 71,
    GET_EMPTY: 72,
    ACK: 80,
    REJECT: 90,
    RECOVER_ASYNC: 100,
    RECOVER: 110,
    RECOVER_OK: 111,
    NACK: 120, // RabbitMQ extension
  },
  CONFIRM: {
    SELECT: 10, // RabbitMQ extension (publisher confirms)
    SELECT_OK: 11,
  },
  TX: {
    SELECT: 10,
    SELECT_OK: 11,
    COMMIT: 20,
    COMMIT_OK: 21,
    ROLLBACK: 30,
    ROLLBACK_OK: 31,
  },
} as const;

/** Reply codes ("<constant>" elements of the XML), keyed by their spec names. */
export const REPLY_CODE = {
  REPLY_SUCCESS: 200,
  CONTENT_TOO_LARGE: 311,
  NO_ROUTE: 312,
  NO_CONSUMERS: 313,
  CONNECTION_FORCED: 320,
  INVALID_PATH: 402,
  ACCESS_REFUSED: 403,
  NOT_FOUND: 404,
  RESOURCE_LOCKED: 405,
  PRECONDITION_FAILED: 406,
  FRAME_ERROR: 501,
  SYNTAX_ERROR: 502,
  COMMAND_INVALID: 503,
  CHANNEL_ERROR: 504,
  UNEXPECTED_FRAME: 505,
  RESOURCE_ERROR: 506,
  NOT_ALLOWED: 530,
  NOT_IMPLEMENTED: 540,
  INTERNAL_ERROR: 541,
} as const;
export type ReplyCodeName = keyof typeof REPLY_CODE;
export type ReplyCode = (typeof REPLY_CODE)[ReplyCodeName];

/**
 * What a reply code closes. The XML classes each code as "soft-error" (the
 * peer closes the channel with channel.close) or "hard-error" (it closes the
 * whole connection with connection.close). 200 is neither: it is the code of
 * a normal close.
 */
export const REPLY_CODE_SCOPE = {
  200: 'none',
  311: 'channel',
  312: 'channel',
  313: 'channel',
  320: 'connection',
  402: 'connection',
  403: 'channel',
  404: 'channel',
  405: 'channel',
  406: 'channel',
  501: 'connection',
  502: 'connection',
  503: 'connection',
  504: 'connection',
  505: 'connection',
  506: 'connection',
  530: 'connection',
  540: 'connection',
  541: 'connection',
} as const satisfies Record<ReplyCode, 'none' | 'channel' | 'connection'>;
export type ReplyCodeScope = (typeof REPLY_CODE_SCOPE)[ReplyCode];

const REPLY_CODE_NAMES = new Map<number, ReplyCodeName>(
  (Object.entries(REPLY_CODE) as [ReplyCodeName, ReplyCode][]).map(([name, code]) => [code, name]),
);

/** Spec name of a reply code ('NOT_FOUND'), which RabbitMQ puts at the start of reply-text. */
export function replyCodeName(code: number): ReplyCodeName | undefined {
  return REPLY_CODE_NAMES.get(code);
}

/** True for the codes whose error closes the whole connection ("hard-error" in the XML). */
export function isConnectionError(code: ReplyCode): boolean {
  return REPLY_CODE_SCOPE[code] === 'connection';
}

/** True for the codes whose error closes only the channel ("soft-error" in the XML). */
export function isChannelError(code: ReplyCode): boolean {
  return REPLY_CODE_SCOPE[code] === 'channel';
}
