/**
 * Methods a client may legitimately send that Cairn does not implement. They
 * are refused with 540 NOT_IMPLEMENTED and a text saying what to use instead,
 * never accepted silently.
 */
import type { AmqpChannel } from '../channel.js';
import { REPLY_CODE, type AmqpMethodNamed } from '../codec/index.js';
import { AmqpChannelError } from '../errors.js';

export const supportedSummary =
  'supported: exchange.declare/delete/bind/unbind (direct, fanout, topic, headers), queue.declare/bind/unbind/purge/delete, basic.*, confirm.select';

export function handleTransaction(_channel: AmqpChannel, method: AmqpMethodNamed<'tx.select' | 'tx.commit' | 'tx.rollback'>): void {
  throw new AmqpChannelError(REPLY_CODE.NOT_IMPLEMENTED, `${method.name}: transactions (the tx class) are not supported by Cairn; use publisher confirms (confirm.select) instead; ${supportedSummary}`);
}
