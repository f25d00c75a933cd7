/**
 * The one place AMQP permissions are checked: before a channel method's
 * handler runs (dispatch.ts), against RabbitMQ's table of what each method
 * needs on which resource of the vhost '/':
 *
 *   method                       configure   write      read
 *   exchange.declare (!passive)  exchange
 *   exchange.delete              exchange
 *   queue.declare (!passive)     queue
 *   queue.delete                 queue
 *   queue.bind / queue.unbind                queue      exchange
 *   queue.purge                                         queue
 *   basic.publish                            exchange
 *   basic.get / basic.consume                           queue
 *
 * A refusal is channel error 403 ACCESS_REFUSED in RabbitMQ's words. A
 * server-named queue (queue.declare with '') is checked as 'amq.gen-', the
 * prefix of the name it will get. A user without permissions in the users
 * file (or no users file) is not checked at all.
 */
import { permissionResourceName, type AmqpPermission, type AmqpPermissions } from '../../auth/amqp-permissions.js';
import type { AmqpChannel } from './channel.js';
import { REPLY_CODE, type AmqpMethod, type AmqpMethodName, type AmqpMethodNamed } from './codec/index.js';
import { AmqpChannelError } from './errors.js';

type Requirement = readonly [permission: AmqpPermission, kind: 'exchange' | 'queue', name: string];
type Requirements<N extends AmqpMethodName> = (channel: AmqpChannel, method: AmqpMethodNamed<N>) => readonly Requirement[];

const requirements: { readonly [N in AmqpMethodName]?: Requirements<N> } = {
  'exchange.declare': (_channel, method) => (method.passive ? [] : [['configure', 'exchange', method.exchange]]),
  'exchange.delete': (_channel, method) => [['configure', 'exchange', method.exchange]],
  'queue.declare': (_channel, method) => (method.passive ? [] : [['configure', 'queue', method.queue === '' ? 'amq.gen-' : method.queue]]),
  'queue.delete': (channel, method) => [['configure', 'queue', channel.queueNameOf(method.queue)]],
  'queue.bind': (channel, method) => [['write', 'queue', channel.queueNameOf(method.queue)], ['read', 'exchange', method.exchange]],
  'queue.unbind': (channel, method) => [['write', 'queue', channel.queueNameOf(method.queue)], ['read', 'exchange', method.exchange]],
  'queue.purge': (channel, method) => [['read', 'queue', channel.queueNameOf(method.queue)]],
  'basic.publish': (_channel, method) => [['write', 'exchange', method.exchange]],
  'basic.get': (channel, method) => [['read', 'queue', channel.queueNameOf(method.queue)]],
  'basic.consume': (channel, method) => [['read', 'queue', channel.queueNameOf(method.queue)]],
};

/** Who is asking, with what permissions; `denied` counts refusals (metrics). */
export interface AmqpAccess {
  readonly username: string | undefined;
  readonly permissions: AmqpPermissions;
  denied(): void;
}

/** Throws 403 ACCESS_REFUSED when the connection's user lacks a permission `method` needs. */
export function checkPermissions(channel: AmqpChannel, method: AmqpMethod): void {
  const access = channel.host.access;
  if (access === undefined) return;
  const required = requirements[method.name] as Requirements<AmqpMethodName> | undefined;
  if (required === undefined) return;
  for (const [permission, kind, name] of required(channel, method as never)) {
    const resource = permissionResourceName(kind, name);
    if (access.permissions[permission].test(resource)) continue;
    access.denied();
    throw new AmqpChannelError(REPLY_CODE.ACCESS_REFUSED, `${permission} access to ${kind} '${resource}' in vhost '/' refused for user '${access.username ?? ''}'`);
  }
}
