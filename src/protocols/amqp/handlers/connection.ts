/**
 * Methods on channel 0: the handshake (start-ok, tune-ok, open) and the
 * connection close, dispatched flat by name like the channel methods.
 *
 *   client                         Cairn
 *   'AMQP' 0 0 9 1        ──▶
 *                         ◀──      connection.start (server-properties, PLAIN AMQPLAIN)
 *   connection.start-ok   ──▶      (password checked; 403 via connection.close if refused)
 *                         ◀──      connection.tune (channel-max, frame-max, heartbeat)
 *   connection.tune-ok    ──▶
 *   connection.open "/"   ──▶      (any other vhost: 530 NOT_ALLOWED)
 *                         ◀──      connection.open-ok
 *
 * While open, connection.update-secret (RabbitMQ's extension for expiring
 * credentials) checks the new secret as the password of the logged-in user:
 * update-secret-ok, or 530 NOT_ALLOWED closing the connection, as RabbitMQ.
 */
import type { AmqpConnection } from '../connection.js';
import {
  booleanOf, FRAME_MIN_SIZE_BYTES, REPLY_CODE,
  type AmqpMethod, type AmqpMethodName, type AmqpMethodNamed, type FieldTable,
} from '../codec/index.js';
import { AmqpConnectionError } from '../errors.js';
import { isSaslMechanism, parseSaslResponse } from '../sasl.js';
import { saslMechanisms, type SaslMechanism } from '../server-properties.js';

const onlyVirtualHost = '/';

export function handleStartOk(connection: AmqpConnection, method: AmqpMethodNamed<'connection.start-ok'>): void {
  connection.expectState('awaiting-start-ok', method.name);
  const mechanism = method.mechanism;
  if (!isSaslMechanism(mechanism)) {
    throw new AmqpConnectionError(REPLY_CODE.ACCESS_REFUSED, `authentication mechanism '${mechanism}' is not supported; supported: ${saslMechanisms.join(' ')}`);
  }
  const { username, password } = parseSaslResponse(mechanism, method.response);
  connection.consumerCancelNotify = clientCapability(method.clientProperties, 'consumer_cancel_notify');
  connection.blockedNotifications = clientCapability(method.clientProperties, 'connection.blocked');
  connection.clientProperties = method.clientProperties;
  connection.beginAuthentication();
  connection.users.authenticate('amqp', username, password)
    .then((outcome) => {
      if (outcome === 'allowed') {
        connection.authenticated(username);
        return;
      }
      // Logged at warn so that the operator sees failed logins at the default level; the 403 text points to the log only when it shows them.
      const logged = outcome !== 'busy' && connection.logger.isLevelEnabled('warn');
      if (outcome === 'busy') connection.logger.debug({ user: username, outcome }, 'AMQP login not checked: too many in progress');
      else connection.logger.warn({ remote: remoteAddress(connection), user: username, outcome }, 'AMQP login refused');
      connection.refused(new AmqpConnectionError(REPLY_CODE.ACCESS_REFUSED, loginRefusedText(mechanism, outcome === 'busy', logged)));
    })
    .catch((error: unknown) => connection.fail(error, 0));
}

/** RabbitMQ's words; which part was wrong (user or password) is deliberately not said to the client. */
function loginRefusedText(mechanism: SaslMechanism, busy: boolean, logged: boolean): string {
  if (busy) return `Login using authentication mechanism ${mechanism} could not be checked: too many logins in progress; retry later`;
  return `Login was refused using authentication mechanism ${mechanism}${logged ? '. For details see the broker logfile.' : ': wrong user name or password, or the user may not use AMQP'}`;
}

function remoteAddress(connection: AmqpConnection): string {
  return `${connection.socket.remoteAddress ?? '?'}:${connection.socket.remotePort ?? '?'}`;
}

function clientCapability(clientProperties: FieldTable, name: string): boolean {
  const capabilities = clientProperties['capabilities'];
  return capabilities?.type === 'F' && booleanOf(capabilities.value[name]) === true;
}

/** Negotiation: 0 from the client means "no limit of mine", so ours applies; otherwise the lower value wins. */
export function handleTuneOk(connection: AmqpConnection, method: AmqpMethodNamed<'connection.tune-ok'>): void {
  connection.expectState('awaiting-tune-ok', method.name);
  const limits = connection.limits;
  const frameMax = method.frameMax === 0 ? limits.frameMaxBytes : Math.min(method.frameMax, limits.frameMaxBytes);
  if (frameMax < FRAME_MIN_SIZE_BYTES) {
    throw new AmqpConnectionError(REPLY_CODE.NOT_ALLOWED, `frame_max=${method.frameMax} < ${FRAME_MIN_SIZE_BYTES} min size`);
  }
  const channelMax = method.channelMax === 0 ? limits.channelMax : Math.min(method.channelMax, limits.channelMax);
  connection.tuned(frameMax, channelMax, method.heartbeat);
}

export function handleOpen(connection: AmqpConnection, method: AmqpMethodNamed<'connection.open'>): void {
  connection.expectState('awaiting-open', method.name);
  if (method.virtualHost !== onlyVirtualHost) {
    throw new AmqpConnectionError(REPLY_CODE.NOT_ALLOWED, `access to vhost '${method.virtualHost}' refused: Cairn has only the vhost '${onlyVirtualHost}'`);
  }
  connection.opened();
}

export function handleClose(connection: AmqpConnection, _method: AmqpMethodNamed<'connection.close'>): void {
  connection.closeByClient();
}

export function handleUpdateSecret(connection: AmqpConnection, method: AmqpMethodNamed<'connection.update-secret'>): void {
  connection.expectState('open', method.name);
  const username = connection.user;
  connection.users.authenticate('amqp', username, method.newSecret)
    .then((outcome) => {
      if (connection.state !== 'open') return;
      if (outcome === 'allowed') {
        connection.logger.info({ reason: method.reason }, 'AMQP secret updated');
        connection.sendMethod(0, { name: 'connection.update-secret-ok' });
        return;
      }
      connection.logger.warn({ remote: remoteAddress(connection), user: username, outcome }, 'AMQP secret update refused');
      connection.fail(new AmqpConnectionError(REPLY_CODE.NOT_ALLOWED, `Secret update was refused for user '${username ?? ''}'`), 0);
    })
    .catch((error: unknown) => connection.fail(error, 0));
}

type ConnectionMethodHandler<N extends AmqpMethodName> = (connection: AmqpConnection, method: AmqpMethodNamed<N>) => void;
type ConnectionMethodHandlers = { readonly [N in AmqpMethodName]?: ConnectionMethodHandler<N> };

const connectionMethodHandlers: ConnectionMethodHandlers = {
  'connection.start-ok': handleStartOk,
  'connection.tune-ok': handleTuneOk,
  'connection.open': handleOpen,
  'connection.close': handleClose,
  'connection.update-secret': handleUpdateSecret,
};

/** The flat dispatch for channel 0. Anything not in the table (close-ok while open, server methods, channel methods) is 503. */
export function dispatchConnectionMethod(connection: AmqpConnection, method: AmqpMethod): void {
  const handler = connectionMethodHandlers[method.name] as ConnectionMethodHandler<AmqpMethodName> | undefined;
  if (handler === undefined) {
    throw new AmqpConnectionError(REPLY_CODE.COMMAND_INVALID, `${method.name} is not a method a client may send on channel 0 now`);
  }
  handler(connection, method as never);
}
