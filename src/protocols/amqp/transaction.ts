/**
 * A transactional channel's buffer (the tx class, AMQP 0-9-1 §1.9): after
 * tx.select, basic.publish, basic.ack, basic.nack and basic.reject take
 * effect at tx.commit, in the order the client sent them, as one atomic group
 * in the log (core: commitTransaction); tx.rollback discards them, and so
 * does the channel's end.
 *
 * Publishes are checked when they arrive (a missing or internal exchange, a
 * bad expiration: the channel error comes then, as in RabbitMQ) and routed at
 * commit. Settlements name their delivery tags when they arrive (`multiple`
 * expanded then), and the deliveries stay unacknowledged on the channel until
 * the commit: a rollback or a closing channel leaves them to be requeued. A tag
 * settled earlier in the same transaction counts as unknown (406), as in
 * RabbitMQ, where a buffered ack already removed it.
 *
 * Bounded: a transaction holds at most transactionOperationsMax operations
 * and transactionBytesMax bytes of message bodies (406 beyond).
 */
import type { AmqpMessage } from '../../core/api.js';
import type { SettleOutcome } from './channel.js';
import { REPLY_CODE } from './codec/index.js';
import { AmqpChannelError } from './errors.js';

export const transactionOperationsMax = 1_000_000;
export const transactionBytesMax = 256 * 1024 * 1024;

export type BufferedOperation =
  | { readonly kind: 'publish'; readonly message: AmqpMessage; readonly persistent: boolean; readonly mandatory: boolean }
  | { readonly kind: 'settle'; readonly deliveryTags: readonly number[]; readonly outcome: SettleOutcome };

export class ChannelTransaction {
  private operations: BufferedOperation[] = [];
  private bytes = 0;
  /** Delivery tags settled by a buffered operation. */
  readonly settledTags = new Set<number>();

  get size(): number {
    return this.operations.length;
  }

  publish(message: AmqpMessage, persistent: boolean, mandatory: boolean): void {
    this.checkRoom(message.body.byteLength);
    this.operations.push({ kind: 'publish', message, persistent, mandatory });
    this.bytes += message.body.byteLength;
  }

  settle(deliveryTags: readonly number[], outcome: SettleOutcome): void {
    this.checkRoom(0);
    this.operations.push({ kind: 'settle', deliveryTags, outcome });
    for (const tag of deliveryTags) this.settledTags.add(tag);
  }

  /** The buffered operations, in order; the buffer is empty afterwards (commit and rollback alike). */
  take(): BufferedOperation[] {
    const taken = this.operations;
    this.operations = [];
    this.bytes = 0;
    this.settledTags.clear();
    return taken;
  }

  private checkRoom(bytes: number): void {
    if (this.operations.length >= transactionOperationsMax) throw new AmqpChannelError(REPLY_CODE.PRECONDITION_FAILED, `a transaction holds at most ${transactionOperationsMax} operations (transactionOperationsMax): commit more often`);
    if (this.bytes + bytes > transactionBytesMax) throw new AmqpChannelError(REPLY_CODE.PRECONDITION_FAILED, `a transaction holds at most ${transactionBytesMax} bytes of message bodies (transactionBytesMax): commit more often`);
  }
}
