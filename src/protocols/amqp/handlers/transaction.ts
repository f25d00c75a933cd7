/**
 * The tx class (AMQP 0-9-1): tx.select makes the channel transactional for
 * the rest of its life; tx.commit writes what it buffered as one atomic group
 * and answers commit-ok once the group is durable; tx.rollback discards it.
 * RabbitMQ's refusals: commit or rollback on a channel that is not
 * transactional, and tx.select on a channel in confirm mode (confirm.ts
 * refuses the other order), are 406 PRECONDITION_FAILED.
 */
import type { AmqpChannel } from '../channel.js';
import { REPLY_CODE, type AmqpMethodNamed } from '../codec/index.js';
import { AmqpChannelError } from '../errors.js';

export function handleTxSelect(channel: AmqpChannel, _method: AmqpMethodNamed<'tx.select'>): void {
  if (channel.confirms !== undefined) throw new AmqpChannelError(REPLY_CODE.PRECONDITION_FAILED, 'cannot switch from confirm to tx mode');
  channel.enableTransactions();
  channel.reply(undefined, false, { name: 'tx.select-ok' });
}

export function handleTxCommit(channel: AmqpChannel, _method: AmqpMethodNamed<'tx.commit'>): void {
  channel.reply(channel.commitTransaction(), false, { name: 'tx.commit-ok' });
}

export function handleTxRollback(channel: AmqpChannel, _method: AmqpMethodNamed<'tx.rollback'>): void {
  channel.rollbackTransaction();
  channel.reply(undefined, false, { name: 'tx.rollback-ok' });
}
