/**
 * An exchange's declaration as RabbitMQ checks it: its one implemented
 * argument (`alternate-exchange`, a string naming where messages go that the
 * exchange routes nowhere), the equivalence of a redeclaration (type,
 * durable, auto_delete, internal and arguments must match: 406 naming the
 * first that differs), and the body of a bind record.
 *
 * Any other exchange argument is refused with 540 naming it, never silently
 * ignored (RabbitMQ stores unknown ones; Cairn says it does not act on them).
 */
import type { BindBody } from '../projections/records.js';
import { BrokerError } from './api.js';
import { destinationOf, type BindingArguments, type Destination, type ExchangeRuntime } from './amqp-exchange.js';

const supportedText = 'alternate-exchange';

/** The alternate-exchange argument, or undefined; 540 for any other argument, 406 for a value that is not a string. */
export function alternateExchangeOf(args: Record<string, unknown>, exchange: string): string | undefined {
  const unsupported = Object.keys(args).filter((name) => name !== 'alternate-exchange');
  if (unsupported.length > 0) {
    throw new BrokerError(540, `NOT_IMPLEMENTED - exchange '${exchange}': argument(s) ${unsupported.map((n) => `'${n}'`).join(', ')} not supported by Cairn (supported: ${supportedText})`);
  }
  const value = args['alternate-exchange'];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new BrokerError(406, `PRECONDITION_FAILED - invalid arg 'alternate-exchange' for exchange '${exchange}' in vhost '/': a string is required`);
  return value;
}

interface Declared {
  readonly type: string;
  readonly durable: boolean;
  readonly autoDelete: boolean;
  readonly internal: boolean;
  readonly alternateExchange: string | undefined;
}

/** A redeclaration must say what the exchange is; RabbitMQ's inequivalent-arg error names the first difference. */
export function checkEquivalentExchange(existing: ExchangeRuntime, declared: Declared): void {
  const pairs: ReadonlyArray<readonly [string, unknown, unknown]> = [
    ['type', declared.type, existing.type],
    ['durable', declared.durable, existing.durable],
    ['auto_delete', declared.autoDelete, existing.autoDelete],
    ['internal', declared.internal, existing.internal],
    ['alternate-exchange', declared.alternateExchange ?? 'none', existing.alternateExchange ?? 'none'],
  ];
  for (const [name, received, current] of pairs) {
    if (received !== current) {
      throw new BrokerError(406, `PRECONDITION_FAILED - inequivalent arg '${name}' for exchange '${existing.name}' in vhost '/': received '${String(received)}' but current is '${String(current)}'`);
    }
  }
}

export function bindBody(op: 'bind' | 'unbind', source: string, destination: Destination, routingKey: string, args: BindingArguments | undefined): BindBody {
  const { kind, name } = destinationOf(destination);
  return {
    op, x: source, k: routingKey,
    ...(kind === 'queue' ? { q: name } : { e: name }),
    ...(args === undefined ? {} : { a: args.bytes }),
  };
}
