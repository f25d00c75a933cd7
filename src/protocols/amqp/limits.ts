/**
 * Every bound the AMQP front end enforces, as named constants with the unit
 * last. The server takes a partial override and checks the result once, at
 * start-up (checkAmqpLimits), so a bad value stops the broker before it
 * accepts a single connection, with an AmqpLimitError naming the limit.
 */
import { FRAME_MIN_SIZE_BYTES, FRAME_SIZE_MAX_BYTES } from './codec/index.js';

/** A limit override out of range. The values come from the operator (flags), so this names the limit; it is not an assertion. */
export class AmqpLimitError extends Error {
  override readonly name = 'AmqpLimitError';
  readonly code = 'EAMQPLIMIT';
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new AmqpLimitError(`AMQP limit: ${message}`);
}

export interface AmqpLimits {
  /**
   * The frame-max Cairn proposes in connection.tune: the largest frame,
   * header and frame-end included, either side may send. The client may
   * lower it (never below the spec's 4096); RabbitMQ proposes the same 128 KiB.
   */
  readonly frameMaxBytes: number;
  /** The highest channel number a client may open (connection.tune channel-max). */
  readonly channelMax: number;
  /** The heartbeat interval Cairn proposes; the client's tune-ok value wins (0 turns heartbeats off). */
  readonly heartbeatSeconds: number;
  /**
   * The largest message body a publisher may announce in a content header.
   * Checked before any body byte is buffered, so a client cannot make the
   * broker allocate more than this per channel (RabbitMQ: max_message_size).
   */
  readonly messageBytesMax: number;
  /**
   * Bytes the socket may hold unsent before the connection counts as
   * congested: no more deliveries to its consumers and no more reading from
   * it until the socket drains.
   */
  readonly writeBufferHighWaterBytes: number;
  /** From TCP accept to connection.open-ok; a client that takes longer is dropped. */
  readonly handshakeTimeoutMs: number;
  /** How long Cairn waits for close-ok after sending connection.close before dropping the socket. */
  readonly closeOkTimeoutMs: number;
  /** Live connections (handshaking ones included); the next one is dropped at once. */
  readonly connectionsMax: number;
  /** Consumers one channel may hold. */
  readonly consumersPerChannelMax: number;
}

export const defaultAmqpLimits: AmqpLimits = {
  frameMaxBytes: 131_072,
  channelMax: 2047,
  heartbeatSeconds: 60,
  messageBytesMax: 16 * 1024 * 1024,
  writeBufferHighWaterBytes: 1024 * 1024,
  handshakeTimeoutMs: 10_000,
  closeOkTimeoutMs: 3_000,
  connectionsMax: 10_000,
  consumersPerChannelMax: 4096,
};

export function resolveAmqpLimits(overrides: Partial<AmqpLimits> = {}): AmqpLimits {
  const limits: AmqpLimits = { ...defaultAmqpLimits, ...overrides };
  checkAmqpLimits(limits);
  return limits;
}

export function checkAmqpLimits(limits: AmqpLimits): void {
  const integerIn = (value: number, low: number, high: number): boolean => Number.isInteger(value) && value >= low && value <= high;
  check(integerIn(limits.frameMaxBytes, FRAME_MIN_SIZE_BYTES, FRAME_SIZE_MAX_BYTES), `frameMaxBytes must be an integer in [${FRAME_MIN_SIZE_BYTES}, ${FRAME_SIZE_MAX_BYTES}]`);
  check(integerIn(limits.channelMax, 1, 0xffff), 'channelMax must be an integer in [1, 65535]');
  check(integerIn(limits.heartbeatSeconds, 0, 0xffff), 'heartbeatSeconds must be an integer in [0, 65535]');
  check(integerIn(limits.messageBytesMax, 1, Number.MAX_SAFE_INTEGER), 'messageBytesMax must be a positive integer');
  // A single frame must fit under the high-water mark, or every large delivery would count as congestion.
  check(Number.isInteger(limits.writeBufferHighWaterBytes) && limits.writeBufferHighWaterBytes >= limits.frameMaxBytes, 'writeBufferHighWaterBytes must be an integer >= frameMaxBytes');
  check(integerIn(limits.handshakeTimeoutMs, 1, 3_600_000), 'handshakeTimeoutMs must be an integer in [1, 3600000]');
  check(integerIn(limits.closeOkTimeoutMs, 1, 600_000), 'closeOkTimeoutMs must be an integer in [1, 600000]');
  check(integerIn(limits.connectionsMax, 1, Number.MAX_SAFE_INTEGER), 'connectionsMax must be a positive integer');
  check(integerIn(limits.consumersPerChannelMax, 1, Number.MAX_SAFE_INTEGER), 'consumersPerChannelMax must be a positive integer');
}
