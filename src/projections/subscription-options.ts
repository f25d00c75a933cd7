/**
 * MQTT 5 subscription options between code and record: long names in code
 * (SubscriptionOptions, state.ts), short keys in sub bodies and snapshots
 * (SubBody, records.ts). Pure. A default option is absent either way, so a
 * 3.1.1 subscription costs no byte and a record written before options
 * existed reads as a subscription with none.
 */
import type { SubBody } from './records.js';
import type { SubscriptionOptions } from './state.js';

/** The option fields of a sub body (what a snapshot keeps beside filter and QoS). */
export type SubscriptionOptionsBody = Pick<SubBody, 'nl' | 'rap' | 'rh' | 'id'>;

/** The options a sub body sets; undefined when all are defaults. */
export function subscriptionOptionsOf(body: SubscriptionOptionsBody): SubscriptionOptions | undefined {
  if (body.nl === undefined && body.rap === undefined && body.rh === undefined && body.id === undefined) return undefined;
  const options: { -readonly [K in keyof SubscriptionOptions]: SubscriptionOptions[K] } = {};
  if (body.nl === true) options.noLocal = true;
  if (body.rap === true) options.retainAsPublished = true;
  if (body.rh === 1 || body.rh === 2) options.retainHandling = body.rh;
  if (body.id !== undefined) options.identifier = body.id;
  return options;
}

/** Options as a SUBSCRIBE gives them (booleans, Retain Handling 0) or as the state keeps them. */
interface OptionsGiven {
  readonly noLocal?: boolean | undefined;
  readonly retainAsPublished?: boolean | undefined;
  readonly retainHandling?: 0 | 1 | 2 | undefined;
  readonly identifier?: number | undefined;
}

/** The sub body fields of some options: only those that are not the default. */
export function subscriptionOptionsBody(options: OptionsGiven | undefined): SubscriptionOptionsBody {
  const body: { -readonly [K in keyof SubscriptionOptionsBody]: SubscriptionOptionsBody[K] } = {};
  if (options === undefined) return body;
  if (options.noLocal === true) body.nl = true;
  if (options.retainAsPublished === true) body.rap = true;
  if (options.retainHandling === 1 || options.retainHandling === 2) body.rh = options.retainHandling;
  if (options.identifier !== undefined) body.id = options.identifier;
  return body;
}
