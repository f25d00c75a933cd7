/**
 * A queue's x-arguments at declare time, checked as RabbitMQ checks them, and
 * the length limits they set.
 *
 * Implemented: x-max-length, x-max-length-bytes and x-message-ttl
 * (non-negative integers of any integer field type: the AMQP handler hands
 * integers over as numbers), x-expires (a positive integer), x-overflow =
 * drop-head | reject-publish | reject-publish-dlx, x-dead-letter-exchange and
 * x-dead-letter-routing-key (strings; a routing key needs an exchange),
 * x-delivery-limit (a non-negative integer), x-single-active-consumer (a
 * boolean) and x-queue-type = classic | quorum (quorum: durable, not exclusive,
 * not auto-delete, as RabbitMQ requires). x-queue-type = stream and
 * x-max-priority are refused with 540 saying why; any other argument is
 * refused with 540 naming it, never silently ignored. A bad value is 406
 * PRECONDITION_FAILED naming the argument; so is a redeclare whose arguments
 * differ from the queue's. Defaults are not stored (x-queue-type = classic,
 * x-single-active-consumer = false), so declaring them or not is equivalent.
 */
import type { QueueArguments } from '../projections/records.js';
import { BrokerError } from './api.js';

const integerArguments = ['x-max-length', 'x-max-length-bytes', 'x-message-ttl', 'x-expires', 'x-delivery-limit'] as const;
const stringArguments = ['x-dead-letter-exchange', 'x-dead-letter-routing-key'] as const;
const overflowBehaviours = ['drop-head', 'reject-publish', 'reject-publish-dlx'] as const;
const queueTypes = ['classic', 'quorum'] as const;
const argumentNames: readonly string[] = [...integerArguments, 'x-overflow', ...stringArguments, 'x-queue-type', 'x-single-active-consumer'];
const supportedText = 'x-max-length, x-max-length-bytes, x-overflow, x-message-ttl, x-expires, x-dead-letter-exchange, x-dead-letter-routing-key, x-delivery-limit, x-queue-type, x-single-active-consumer';

/**
 * Arguments RabbitMQ has and Cairn refuses on purpose, with the reason. A priority queue would need
 * its ready list ordered by (priority, seq): a queue here is one seq-ordered view over its log
 * entries (ready-entries.ts), whose cursor means "everything at or below this seq was taken".
 */
const refusedArguments: Readonly<Record<string, string>> = {
  'x-max-priority': "priority queues are not supported by Cairn: a queue delivers in publish (seq) order, as one ordered view over the log; use one queue per priority",
};

/** What the arguments limit, in the units the runtime counts (ready messages, ready body bytes). */
export interface QueueLimits {
  readonly readyMessagesMax: number;
  readonly readyBytesMax: number;
  /** x-overflow = reject-publish or reject-publish-dlx: a full queue refuses the new message instead of dropping its oldest. */
  readonly rejectPublish: boolean;
}

export const unlimited: QueueLimits = { readyMessagesMax: Infinity, readyBytesMax: Infinity, rejectPublish: false };

type MutableArguments = { -readonly [K in keyof QueueArguments]: QueueArguments[K] };

/** The validated arguments of a queue.declare, or undefined when there are none. Throws BrokerError 540 / 406. */
export function queueArgumentsOf(declared: Record<string, unknown>, queue: string): QueueArguments | undefined {
  const names = Object.keys(declared);
  for (const name of names) {
    const why = refusedArguments[name];
    if (why !== undefined) throw new BrokerError(540, `NOT_IMPLEMENTED - queue '${queue}': argument '${name}': ${why}`);
  }
  const unsupported = names.filter((name) => !argumentNames.includes(name));
  if (unsupported.length > 0) {
    throw new BrokerError(540, `NOT_IMPLEMENTED - queue '${queue}': argument(s) ${unsupported.map((n) => `'${n}'`).join(', ')} not supported by Cairn (supported: ${supportedText})`);
  }
  if (names.length === 0) return undefined;
  const args: MutableArguments = {};
  for (const name of integerArguments) {
    const value = declared[name];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      throw invalid(name, queue, `${describe(value)}: a non-negative integer is required`);
    }
    // RabbitMQ: a queue that expires the moment it is unused makes no sense.
    if (name === 'x-expires' && value === 0) throw invalid(name, queue, `'0': a positive integer is required`);
    args[name] = value;
  }
  readDeadLettering(declared, queue, args);
  const overflow = declared['x-overflow'];
  if (overflow !== undefined) {
    if (!(overflowBehaviours as readonly unknown[]).includes(overflow)) {
      throw invalid('x-overflow', queue, `${describe(overflow)}: one of ${overflowBehaviours.join(', ')} is required`);
    }
    args['x-overflow'] = overflow as (typeof overflowBehaviours)[number];
  }
  readQueueType(declared, queue, args);
  const singleActive = declared['x-single-active-consumer'];
  if (singleActive !== undefined) {
    if (typeof singleActive !== 'boolean') throw invalid('x-single-active-consumer', queue, `${describe(singleActive)}: a boolean is required`);
    if (singleActive) args['x-single-active-consumer'] = true;
  }
  return Object.keys(args).length === 0 ? undefined : args;
}

function readQueueType(declared: Record<string, unknown>, queue: string, args: MutableArguments): void {
  const type = declared['x-queue-type'];
  if (type === undefined) return;
  if (type === 'stream') {
    throw new BrokerError(540, `NOT_IMPLEMENTED - queue '${queue}': x-queue-type 'stream' is not supported by Cairn (supported: ${queueTypes.join(', ')})`);
  }
  if (!(queueTypes as readonly unknown[]).includes(type)) {
    throw invalid('x-queue-type', queue, `${describe(type)}: one of ${queueTypes.join(', ')} is required`);
  }
  if (type === 'quorum') args['x-queue-type'] = 'quorum';
}

/** RabbitMQ's rules for a quorum queue's properties [rabbit_quorum_queue:declare]: it is durable and outlives its declarer. */
export function checkQuorumProperties(args: QueueArguments | undefined, queue: string, options: { durable: boolean; exclusive: boolean; autoDelete: boolean }): void {
  if (args?.['x-queue-type'] !== 'quorum') return;
  const refused = !options.durable ? 'non-durable' : options.exclusive ? 'exclusive' : options.autoDelete ? 'auto-delete' : undefined;
  if (refused !== undefined) throw new BrokerError(406, `PRECONDITION_FAILED - invalid property '${refused}' for queue '${queue}' in vhost '/'`);
  if (args['x-overflow'] === 'reject-publish-dlx') throw invalid('x-overflow', queue, "'reject-publish-dlx' is not supported by quorum queues");
}

function readDeadLettering(declared: Record<string, unknown>, queue: string, args: MutableArguments): void {
  for (const name of stringArguments) {
    const value = declared[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw invalid(name, queue, `${describe(value)}: a string is required`);
    args[name] = value;
  }
  if (args['x-dead-letter-routing-key'] !== undefined && args['x-dead-letter-exchange'] === undefined) {
    throw invalid('x-dead-letter-routing-key', queue, 'a dead-letter routing key needs x-dead-letter-exchange');
  }
}

/** A redeclare must ask for the same arguments as the queue has [RabbitMQ: inequivalent arg]. */
export function checkEquivalentArguments(current: QueueArguments | undefined, wanted: QueueArguments | undefined, queue: string): void {
  for (const name of argumentNames as ReadonlyArray<keyof QueueArguments>) {
    const had = current?.[name];
    const asked = wanted?.[name];
    if (had !== asked) {
      throw new BrokerError(406, `PRECONDITION_FAILED - inequivalent arg '${name}' for queue '${queue}' in vhost '/': received ${valueText(asked)} but current is ${valueText(had)}`);
    }
  }
}

export function limitsOf(args: QueueArguments | undefined): QueueLimits {
  if (args === undefined) return unlimited;
  return {
    readyMessagesMax: args['x-max-length'] ?? Infinity,
    readyBytesMax: args['x-max-length-bytes'] ?? Infinity,
    rejectPublish: args['x-overflow'] === 'reject-publish' || args['x-overflow'] === 'reject-publish-dlx',
  };
}

/** Whether a message of `size` body bytes would take the queue past its limits [RabbitMQ will_overflow]. */
export function wouldOverflow(limits: QueueLimits, readyCount: number, readyBytes: number, size: number): boolean {
  return readyCount + 1 > limits.readyMessagesMax || readyBytes + size > limits.readyBytesMax;
}

function invalid(name: string, queue: string, why: string): BrokerError {
  return new BrokerError(406, `PRECONDITION_FAILED - invalid arg '${name}' for queue '${queue}' in vhost '/': ${why}`);
}

/** The AMQP handler passes a field of another type (double, table…) as its tagged value: name the tag. */
function describe(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'string') return `'${value}'`;
  const tag = typeof value === 'object' && value !== null && 'type' in value ? (value as { type: unknown }).type : undefined;
  return typeof tag === 'string' ? `a field of type '${tag}'` : `a value of type ${typeof value}`;
}

function valueText(value: number | string | boolean | undefined): string {
  return value === undefined ? 'none' : `the value '${value}'`;
}
