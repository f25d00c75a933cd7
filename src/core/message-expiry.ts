/**
 * Message TTL, as RabbitMQ's classic queues apply it: a message's deadline is
 * the time it entered the queue (its msg record's timestamp) plus the smaller
 * of the queue's x-message-ttl and the message's own `expiration` property
 * (milliseconds, as a string). A message expires only at the head of its
 * queue — when a consumer or basic.get would take it, or when a timer set for
 * the head's deadline fires while nobody takes it — and is never delivered
 * after its deadline. A TTL of 0 counts as 1 ms: the message reaches a
 * consumer that is ready at once, and expires otherwise.
 *
 * HeadExpiry keeps one timer per queue, for the deadline of its current head.
 * Only queues that can hold an expiring message are looked at: those with
 * x-message-ttl, those a message with `expiration` has entered, and recovered
 * ones (their messages may carry one); everything else costs one check per
 * dispatch.
 */
import { decodeProperties } from '../protocols/amqp/codec/index.js';
import { BrokerError, type AmqpMessage } from './api.js';
import type { QueueRuntime } from './amqp-queue.js';
import type { Timers } from './timers.js';

/** Whether raw properties carry `expiration` (flag bit 8: the lowest bit of the first flags byte), without decoding them. */
export function hasExpiration(raw: Uint8Array): boolean {
  return raw.length >= 2 && (raw[0]! & 0x01) !== 0;
}

/** The `expiration` property in milliseconds, or undefined. Throws 406 for a value that is not a non-negative integer, as RabbitMQ does at publish. */
export function expirationMsOf(raw: Uint8Array): number | undefined {
  if (!hasExpiration(raw)) return undefined;
  const text = decodeProperties(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)).expiration;
  if (text === undefined) return undefined;
  const value = /^[0-9]{1,15}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value)) throw new BrokerError(406, `PRECONDITION_FAILED - invalid expiration '${text}': a non-negative integer number of milliseconds is required`);
  return value;
}

/** When `message` expires in `queue` (milliseconds since the epoch), or Infinity. */
export function deadlineOf(queue: QueueRuntime, message: AmqpMessage): number {
  const queueTtl = queue.queueArguments?.['x-message-ttl'];
  const messageTtl = expirationMsOf(message.properties);
  const ttl = Math.min(queueTtl ?? Infinity, messageTtl ?? Infinity);
  return ttl === Infinity ? Infinity : (message.publishedAt ?? 0) + Math.max(ttl, 1);
}

interface ArmedHead {
  readonly seq: number;
  /** Undefined when the head has no deadline (nothing to wait for until the head changes). */
  readonly handle: unknown;
}

export class HeadExpiry {
  private readonly armed = new Map<QueueRuntime, ArmedHead>();
  private readonly watched = new WeakSet<QueueRuntime>();

  constructor(
    private readonly timers: Timers,
    private readonly now: () => number,
    /** The head's message without taking it, or undefined when it cannot be read now. */
    private readonly peek: (queue: QueueRuntime) => { readonly seq: number; readonly message: AmqpMessage } | undefined,
    /** The head's deadline has come: expire what is due. */
    private readonly due: (queue: QueueRuntime) => void,
  ) {}

  /** A message with `expiration` entered the queue, or the queue was recovered with messages that may carry one. */
  watch(queue: QueueRuntime): void {
    this.watched.add(queue);
  }

  mayExpire(queue: QueueRuntime): boolean {
    return queue.queueArguments?.['x-message-ttl'] !== undefined || this.watched.has(queue);
  }

  /** Checked for every message taken off a queue: two cheap tests unless it can expire at all. */
  isExpired(queue: QueueRuntime, message: AmqpMessage): boolean {
    return (queue.queueArguments?.['x-message-ttl'] !== undefined || hasExpiration(message.properties)) && deadlineOf(queue, message) <= this.now();
  }

  /** Sets the timer for the head's deadline, unless it is set for this head already. */
  arm(queue: QueueRuntime): void {
    if (!this.mayExpire(queue)) return;
    const head = queue.ready.first();
    const current = this.armed.get(queue);
    if (head === undefined) return this.forget(queue);
    if (current !== undefined && current.seq === head.seq) return;
    const peeked = this.peek(queue);
    if (peeked === undefined) return;
    this.forget(queue);
    const deadline = deadlineOf(queue, peeked.message);
    const handle = deadline === Infinity ? undefined : this.timers.set(() => {
      this.armed.delete(queue);
      this.due(queue);
    }, Math.max(1, deadline - this.now())); // never 0: a timer firing early must not spin
    this.armed.set(queue, { seq: peeked.seq, handle });
  }

  /** The queue is gone or its head changed in a way arm() cannot see (a purge): drop its timer. */
  forget(queue: QueueRuntime): void {
    const current = this.armed.get(queue);
    if (current === undefined) return;
    if (current.handle !== undefined) this.timers.clear(current.handle);
    this.armed.delete(queue);
  }
}
