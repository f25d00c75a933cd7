/**
 * The one flat dispatch for methods on a channel: method name → handler.
 * Control flow stays in channel.ts and connection.ts; each handler is a
 * leaf that calls the core and replies, and throws typed errors that only
 * the connection turns into wire codes (errors.ts).
 *
 * A method missing from the table is one a client must not send on an open
 * channel: a server-to-client method, a connection method, or a second
 * channel.open. Those are connection errors (503 / 504), as in RabbitMQ.
 */
import type { AmqpChannel } from './channel.js';
import { REPLY_CODE, type AmqpMethod, type AmqpMethodName, type AmqpMethodNamed } from './codec/index.js';
import { AmqpConnectionError } from './errors.js';
import { handleBasicCancel, handleBasicConsume, handleBasicQos } from './handlers/basic-consume.js';
import { handleBasicGet } from './handlers/basic-get.js';
import { handleBasicPublish } from './handlers/basic-publish.js';
import { handleBasicAck, handleBasicNack, handleBasicRecover, handleBasicRecoverAsync, handleBasicReject } from './handlers/basic-settle.js';
import { handleChannelClose, handleChannelCloseOk, handleChannelFlow, handleChannelFlowOk } from './handlers/channel.js';
import { handleConfirmSelect } from './handlers/confirm.js';
import { handleExchangeBind, handleExchangeDeclare, handleExchangeDelete, handleExchangeUnbind } from './handlers/exchange.js';
import { handleQueueBind, handleQueueDeclare, handleQueueDelete, handleQueuePurge, handleQueueUnbind } from './handlers/queue.js';
import { handleTxCommit, handleTxRollback, handleTxSelect } from './handlers/transaction.js';
import { checkPermissions } from './permission-check.js';

export { publishAssembled } from './handlers/basic-publish.js';

type ChannelMethodHandler<N extends AmqpMethodName> = (channel: AmqpChannel, method: AmqpMethodNamed<N>) => void;
type ChannelMethodHandlers = { readonly [N in AmqpMethodName]?: ChannelMethodHandler<N> };

const channelMethodHandlers: ChannelMethodHandlers = {
  'channel.close': handleChannelClose,
  'channel.close-ok': handleChannelCloseOk,
  'channel.flow': handleChannelFlow,
  'channel.flow-ok': handleChannelFlowOk,
  'exchange.declare': handleExchangeDeclare,
  'exchange.delete': handleExchangeDelete,
  'exchange.bind': handleExchangeBind,
  'exchange.unbind': handleExchangeUnbind,
  'queue.declare': handleQueueDeclare,
  'queue.bind': handleQueueBind,
  'queue.unbind': handleQueueUnbind,
  'queue.purge': handleQueuePurge,
  'queue.delete': handleQueueDelete,
  'basic.qos': handleBasicQos,
  'basic.consume': handleBasicConsume,
  'basic.cancel': handleBasicCancel,
  'basic.publish': handleBasicPublish,
  'basic.get': handleBasicGet,
  'basic.ack': handleBasicAck,
  'basic.nack': handleBasicNack,
  'basic.reject': handleBasicReject,
  'basic.recover': handleBasicRecover,
  'basic.recover-async': handleBasicRecoverAsync,
  'confirm.select': handleConfirmSelect,
  'tx.select': handleTxSelect,
  'tx.commit': handleTxCommit,
  'tx.rollback': handleTxRollback,
};

export function dispatchChannelMethod(channel: AmqpChannel, method: AmqpMethod): void {
  const handler = channelMethodHandlers[method.name] as ChannelMethodHandler<AmqpMethodName> | undefined;
  if (handler === undefined) throw notOnOpenChannel(method.name, channel.number);
  checkPermissions(channel, method);
  handler(channel, method as never);
}

function notOnOpenChannel(name: AmqpMethodName, channel: number): AmqpConnectionError {
  if (name === 'channel.open') return new AmqpConnectionError(REPLY_CODE.CHANNEL_ERROR, `second 'channel.open' seen on channel ${channel}`);
  return new AmqpConnectionError(REPLY_CODE.COMMAND_INVALID, `${name} is not a method a client may send on a channel`);
}
