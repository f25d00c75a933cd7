/**
 * Content assembly for one channel (spec 4.2.6): a basic.publish method
 * frame, then one content header frame, then body frames until body-size
 * bytes have arrived. Frames of one message are contiguous on their channel;
 * anything else in between is 505 UNEXPECTED_FRAME, a connection error.
 *
 * The body is copied into one buffer of the announced size, allocated when
 * the header arrives and only after body-size was checked against
 * messageBytesMax, so a peer cannot make us hold more than that per channel.
 * Frame payloads are views into socket chunks: copying them also lets the
 * chunk be collected while the message waits in a queue.
 */
import { assert } from '../../assert.js';
import { CLASS_ID, decodeContentHeader, REPLY_CODE, type AmqpMethodNamed } from './codec/index.js';
import { AmqpChannelError, AmqpConnectionError } from './errors.js';

export type PublishMethod = AmqpMethodNamed<'basic.publish'>;

export interface AssembledMessage {
  readonly method: PublishMethod;
  /** The content header's raw property bytes, as sent. */
  readonly properties: Buffer;
  readonly body: Buffer;
}

export type ContentExpectation = 'method' | 'header' | 'body';

const emptyBody = Buffer.alloc(0);

export class ContentAssembler {
  private method: PublishMethod | undefined;
  private properties: Buffer | undefined;
  private body: Buffer = emptyBody;
  private received = 0;

  constructor(private readonly messageBytesMax: number) {}

  /** What the next frame on this channel must be. */
  get expecting(): ContentExpectation {
    if (this.method === undefined) return 'method';
    return this.properties === undefined ? 'header' : 'body';
  }

  start(method: PublishMethod): void {
    assert(this.method === undefined, 'content started while another message is being assembled');
    this.method = method;
  }

  /** The content header; returns the message when it has no body. */
  header(payload: Buffer): AssembledMessage | undefined {
    const method = this.method;
    assert(method !== undefined && this.properties === undefined, 'content header without a pending method');
    const header = decodeContentHeader(payload);
    if (header.classId !== CLASS_ID.BASIC) {
      throw new AmqpConnectionError(REPLY_CODE.UNEXPECTED_FRAME, `content header for class ${header.classId} after basic.publish (class ${CLASS_ID.BASIC})`);
    }
    if (header.bodySize > this.messageBytesMax) {
      this.reset();
      throw new AmqpChannelError(REPLY_CODE.PRECONDITION_FAILED, `message size ${header.bodySize} is larger than configured max size ${this.messageBytesMax}`);
    }
    this.properties = header.rawProperties;
    if (header.bodySize === 0) return this.complete();
    this.body = Buffer.allocUnsafe(header.bodySize);
    this.received = 0;
    return undefined;
  }

  /** One body frame; returns the message once body-size bytes are in. */
  bodyFrame(payload: Buffer): AssembledMessage | undefined {
    assert(this.method !== undefined && this.properties !== undefined, 'body frame without a content header');
    const remaining = this.body.length - this.received;
    if (payload.length > remaining) {
      throw new AmqpConnectionError(REPLY_CODE.UNEXPECTED_FRAME, `body frame of ${payload.length} bytes exceeds the ${remaining} bytes left of body-size ${this.body.length}`);
    }
    payload.copy(this.body, this.received);
    this.received += payload.length;
    return this.received === this.body.length ? this.complete() : undefined;
  }

  /** Forget a half-assembled message (the channel is closing). */
  reset(): void {
    this.method = undefined;
    this.properties = undefined;
    this.body = emptyBody;
    this.received = 0;
  }

  private complete(): AssembledMessage {
    const message = { method: this.method!, properties: this.properties!, body: this.body };
    this.reset();
    return message;
  }
}
