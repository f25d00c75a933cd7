/**
 * Cairn's AMQP 0-9-1 wire codec: pure functions from bytes to frames, methods,
 * content headers and field tables and back, plus FrameReader to buffer a
 * socket's reads. No sockets, no broker state. See each module's header for
 * its format and invariants.
 */
export {
  CLASS_ID,
  FRAME_END,
  FRAME_HEADER_BYTES,
  FRAME_MIN_SIZE_BYTES,
  FRAME_OVERHEAD_BYTES,
  FRAME_SIZE_MAX_BYTES,
  FRAME_TYPE,
  METHOD_ID,
  PROTOCOL_HEADER,
  REPLY_CODE,
  REPLY_CODE_SCOPE,
  isChannelError,
  isConnectionError,
  replyCodeName,
  type ClassId,
  type FrameType,
  type ReplyCode,
  type ReplyCodeName,
  type ReplyCodeScope,
} from './spec.js';
export {
  AmqpCodecError,
  AmqpFrameError,
  CODEC_ERROR_CODE,
  type CodecErrorCode,
} from './errors.js';
export {
  NEED_MORE,
  decodeFrame,
  decodeFrameHeader,
  encodeFrame,
  encodeHeartbeatFrame,
  type DecodedFrame,
  type Frame,
  type FrameHeader,
  type NeedMore,
} from './frame.js';
export { FrameReader } from './frame-reader.js';
export { checkProtocolHeader, type ProtocolHeaderCheck } from './protocol-header.js';
export {
  FIELD_NESTING_DEPTH_MAX,
  FIELD_TYPE,
  decodeFieldArray,
  decodeFieldTable,
  encodeFieldArray,
  encodeFieldTable,
  type Decimal,
  type FieldTable,
  type FieldTypeTag,
  type FieldValue,
} from './field-codec.js';
export {
  booleanOf,
  integerOf,
  stringOf,
  toFieldTable,
  toFieldValue,
  type PlainFieldValue,
} from './plain-field-values.js';
export { METHOD_DEFINITIONS, type MethodDefinition, type MethodFieldType } from './method-definitions.js';
export type {
  AmqpMethod,
  AmqpMethodInput,
  AmqpMethodName,
  AmqpMethodNamed,
  ContentMethodInput,
  ContentMethodName,
} from './method-types.js';
export {
  decodeMethod,
  encodeMethod,
  encodeMethodFrame,
  hasContent,
  methodDefinition,
  methodDefinitionById,
} from './methods.js';
export {
  BASIC_PROPERTY_DEFINITIONS,
  DELIVERY_MODE,
  decodeContentHeader,
  decodeProperties,
  deliveryModeOf,
  encodeContentHeader,
  encodeProperties,
  validateProperties,
  type BasicProperties,
  type ContentHeader,
} from './content-header.js';
export { encodeMessage, type OutgoingMessage } from './message-encoder.js';
export { truncateShortString } from './byte-writer.js';
