/**
 * channel.* methods on an open channel. channel.open itself is the
 * connection's (the channel does not exist before it), see connection.ts.
 */
import type { AmqpChannel } from '../channel.js';
import type { AmqpMethodNamed } from '../codec/index.js';

/** The client closes the channel: unacked deliveries go back to their queues, then close-ok. */
export function handleChannelClose(channel: AmqpChannel, _method: AmqpMethodNamed<'channel.close'>): void {
  channel.host.logger.debug({ channel: channel.number }, 'AMQP channel closed by client');
  channel.closeByClient();
}

/** A close-ok for a close we never sent: harmless, and clients that race their own close send it. */
export function handleChannelCloseOk(channel: AmqpChannel, _method: AmqpMethodNamed<'channel.close-ok'>): void {
  channel.host.logger.debug({ channel: channel.number }, 'AMQP stray channel.close-ok ignored');
}

/** channel.flow from the client: active=false pauses deliveries to this channel until active=true. */
export function handleChannelFlow(channel: AmqpChannel, method: AmqpMethodNamed<'channel.flow'>): void {
  channel.setFlow(method.active);
  channel.reply(undefined, false, { name: 'channel.flow-ok', active: method.active });
}

/** Cairn never sends channel.flow, so a flow-ok answers nothing; ignore it. */
export function handleChannelFlowOk(channel: AmqpChannel, _method: AmqpMethodNamed<'channel.flow-ok'>): void {
  channel.host.logger.debug({ channel: channel.number }, 'AMQP stray channel.flow-ok ignored');
}
