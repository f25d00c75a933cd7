/**
 * One AMQP 0-9-1 connection: bytes in → FrameReader → frames routed to
 * channel 0 (the connection's own methods, handlers/connection.ts) or to an
 * AmqpChannel; frames out through `write`, corked per tick so everything
 * produced in one tick leaves in one writev.
 *
 * Life cycle (spec 2.2.4, 4.2.2):
 *   awaiting-header ─'AMQP'0091─▶ awaiting-start-ok ─start-ok─▶ authenticating
 *     ─allowed─▶ awaiting-tune-ok ─tune-ok─▶ awaiting-open ─open─▶ open
 *   any state ─error─▶ closing (connection.close sent; wait for close-ok) ─▶ closed
 *   any state ─client's connection.close / socket gone─▶ closed
 *
 * Invariants:
 * - Only `fail` turns errors into wire reactions (via errors.ts), and only
 *   `finalize` ends the connection: once, releasing every channel (their
 *   unacked deliveries are requeued, redelivered) and then telling the core
 *   (exclusive queues go).
 * - Frames are applied in arrival order, and a channel's unacked deliveries
 *   are requeued only after the last byte the client sent was read: when the
 *   socket is gone, never at connection.close. A basic.ack written before a
 *   hang-up is applied and recorded, not redelivered (issue 11).
 * - No frame is dispatched while authenticating or after the connection
 *   started closing, except close/close-ok on channel 0 and basic.ack / nack
 *   / reject on a channel (channel.ts receiveSettlement).
 * - While the socket holds more than writeBufferHighWaterBytes unsent, the
 *   connection accepts no deliveries and reads nothing; 'drain' undoes both.
 * - A misbehaving client only ever closes its own connection.
 */
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { AssertionError } from '../../assert.js';
import type { AmqpCore } from '../../core/api.js';
import type { Users } from '../../auth/users.js';
import { socketDescription, type ConnectionDescription, type ManagedConnection } from '../connection-description.js';
import { AmqpChannel, type ChannelHost } from './channel.js';
import {
  CLASS_ID, decodeMethod, encodeHeartbeatFrame, encodeMessage, encodeMethodFrame, FRAME_MIN_SIZE_BYTES, FRAME_TYPE,
  FrameReader, METHOD_ID, NEED_MORE, REPLY_CODE,
  type AmqpMethodInput, type ContentMethodInput, type FieldTable, type Frame,
} from './codec/index.js';
import { AmqpConnectionError, replyText, wireErrorOf, type FailedMethod, type WireError } from './errors.js';
import { plainTableOf } from './field-table-json.js';
import { dispatchConnectionMethod } from './handlers/connection.js';
import { Heartbeat, type HeartbeatPeer } from './heartbeat.js';
import type { AmqpLimits } from './limits.js';
import type { AmqpAccess } from './permission-check.js';
import { saslMechanisms, serverProperties } from './server-properties.js';

/** What every connection of one server shares. */
export interface AmqpConnectionContext {
  readonly core: AmqpCore;
  readonly users: Users;
  readonly limits: AmqpLimits;
  readonly logger: Logger;
  /** Told of every permission refusal (metrics). */
  readonly accessDenied?: (() => void) | undefined;
  /** Why publishers are held back now (disk-free-alarm.ts), read at each publish; absent: never. */
  readonly publishAlarm?: { readonly reason: string | undefined } | undefined;
}

export type ConnectionState =
  | 'awaiting-header'
  | 'awaiting-start-ok'
  | 'authenticating'
  | 'awaiting-tune-ok'
  | 'awaiting-open'
  | 'open'
  | 'closing'
  | 'closed';

/** How long a socket we ended may take to flush its last frames before it is destroyed. */
const closeLingerMs = 1_000;

let connectionSerial = 0;

export class AmqpConnection implements ChannelHost, HeartbeatPeer, ManagedConnection {
  private stateValue: ConnectionState = 'awaiting-header';
  private readonly reader = new FrameReader();
  private readonly channels = new Map<number, AmqpChannel>();
  /** Negotiated in tune-ok; until then the spec minimum applies both ways. */
  private frameMax = FRAME_MIN_SIZE_BYTES;
  private channelMax: number;
  /** Off until tune-ok says otherwise. */
  private heartbeat = new Heartbeat(0, this);
  private handshakeTimer: NodeJS.Timeout | undefined;
  private closeTimer: NodeJS.Timeout | undefined;
  private corked = false;
  private congested = false;
  /** The client said connection.blocked in its capabilities: it is told when publishing is held back. */
  blockedNotifications = false;
  /** This connection has published: it is told of the alarm (RabbitMQ blocks publishers only). */
  private publisher = false;
  /** A publish arrived while the alarm was on: nothing more is read until it clears. */
  private publishBlocked = false;
  /** connection.blocked was sent and connection.unblocked is owed. */
  private blockedSent = false;
  private loggerValue: Logger;
  readonly owner: string;
  consumerCancelNotify = false;
  /** start-ok's client-properties, for the management API. */
  clientProperties: FieldTable = {};
  private readonly connectedAt = Date.now();
  private username: string | undefined = undefined;
  /** Set once the login is accepted, when the user's permissions are restricted. */
  access: AmqpAccess | undefined = undefined;

  constructor(
    readonly socket: Socket,
    private readonly context: AmqpConnectionContext,
    private readonly onClosed: (connection: AmqpConnection) => void,
  ) {
    const remote = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
    this.owner = `amqp#${++connectionSerial}@${remote}`;
    this.loggerValue = context.logger.child({ connection: this.owner });
    this.channelMax = context.limits.channelMax;
    // Nagle would hold small confirms and acks for up to ~40 ms waiting for more data.
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('drain', () => this.drained());
    socket.on('error', (error: Error) => {
      this.logger.debug({ err: error.message }, 'AMQP socket error');
      socket.destroy();
    });
    socket.on('close', () => this.finalize('socket closed'));
    this.handshakeTimer = setTimeout(() => {
      this.logger.debug({ state: this.stateValue }, 'AMQP handshake timed out');
      socket.destroy();
    }, context.limits.handshakeTimeoutMs);
    this.handshakeTimer.unref();
  }

  get logger(): Logger {
    return this.loggerValue;
  }

  get core(): AmqpCore {
    return this.context.core;
  }

  get limits(): AmqpLimits {
    return this.context.limits;
  }

  get users(): Users {
    return this.context.users;
  }

  get state(): ConnectionState {
    return this.stateValue;
  }

  /** The logged-in user (undefined: anonymous, or before the login). */
  get user(): string | undefined {
    return this.username;
  }

  // ─────────────────────────── inbound ───────────────────────────

  private receive(chunk: Buffer): void {
    if (this.stateValue === 'closed') return;
    this.heartbeat.received();
    this.reader.push(chunk);
    this.drain();
  }

  /** Handle every whole frame buffered, as long as the state lets frames through. */
  private drain(): void {
    if (this.stateValue === 'awaiting-header' && !this.readProtocolHeader()) return;
    while (this.stateValue !== 'authenticating' && this.stateValue !== 'closed') {
      let frame: Frame | typeof NEED_MORE;
      try {
        frame = this.reader.readFrame();
      } catch (error: unknown) {
        // The byte stream cannot be resynchronised: say why, then hang up.
        this.fail(error, 0, undefined, true);
        return;
      }
      if (frame === NEED_MORE) return;
      this.receiveFrame(frame);
    }
  }

  /** Spec 4.2.2: a header we do not speak gets ours back, then the socket closes. */
  private readProtocolHeader(): boolean {
    const result = this.reader.readProtocolHeader();
    if (result === NEED_MORE) return false;
    if (!result.accepted) {
      this.logger.debug('AMQP client sent an unsupported protocol header; answered with AMQP 0-9-1');
      this.stateValue = 'closing';
      this.endSocket(result.reply);
      return false;
    }
    this.stateValue = 'awaiting-start-ok';
    this.sendConnectionStart();
    return true;
  }

  private receiveFrame(frame: Frame): void {
    try {
      // Any frame counts as activity for the heartbeat; a heartbeat frame is nothing more.
      if (frame.type === FRAME_TYPE.HEARTBEAT) return;
      if (this.stateValue === 'closing') {
        this.receiveWhileClosing(frame);
      } else if (frame.channel === 0) {
        if (frame.type !== FRAME_TYPE.METHOD) throw new AmqpConnectionError(REPLY_CODE.UNEXPECTED_FRAME, `content frame (type ${frame.type}) on channel 0`);
        dispatchConnectionMethod(this, decodeMethod(frame.payload));
      } else {
        this.receiveChannelFrame(frame);
      }
    } catch (error: unknown) {
      this.fail(error, frame.channel, failedMethodOf(frame));
    }
  }

  private receiveChannelFrame(frame: Frame): void {
    if (this.stateValue !== 'open') {
      throw new AmqpConnectionError(REPLY_CODE.COMMAND_INVALID, `frame on channel ${frame.channel} before the connection is open (state ${this.stateValue})`);
    }
    const channel = this.channels.get(frame.channel);
    if (channel !== undefined) {
      channel.receive(frame);
      return;
    }
    if (frame.channel > this.channelMax) {
      throw new AmqpConnectionError(REPLY_CODE.CHANNEL_ERROR, `channel ${frame.channel} is above the negotiated channel-max ${this.channelMax}`);
    }
    if (frame.type !== FRAME_TYPE.METHOD || decodeMethod(frame.payload).name !== 'channel.open') {
      throw new AmqpConnectionError(REPLY_CODE.CHANNEL_ERROR, `expected 'channel.open' on channel ${frame.channel}`);
    }
    this.channels.set(frame.channel, new AmqpChannel(frame.channel, this));
    this.sendMethod(frame.channel, { name: 'channel.open-ok' });
  }

  /**
   * Closing (either side sent connection.close): only its answer matters, the
   * client's own close, and settlements the client sent before it saw ours.
   */
  private receiveWhileClosing(frame: Frame): void {
    if (frame.channel !== 0) {
      this.channels.get(frame.channel)?.receiveSettlement(frame);
      return;
    }
    if (frame.type !== FRAME_TYPE.METHOD) return;
    const failed = failedMethodOf(frame);
    if (failed?.classId !== CLASS_ID.CONNECTION) return;
    if (failed.methodId === METHOD_ID.CONNECTION.CLOSE) this.sendMethod(0, { name: 'connection.close-ok' });
    if (failed.methodId === METHOD_ID.CONNECTION.CLOSE || failed.methodId === METHOD_ID.CONNECTION.CLOSE_OK) this.endSocket();
  }

  // ─────────────────────── handshake (for handlers/connection.ts) ───────────────────────

  private sendConnectionStart(): void {
    this.sendMethod(0, {
      name: 'connection.start', versionMajor: 0, versionMinor: 9,
      serverProperties: serverPropertiesTable(), mechanisms: Buffer.from(mechanismsText), locales: Buffer.from('en_US'),
    });
  }

  /** start-ok arrived: stop dispatching until the password is checked (scrypt runs off the event loop). */
  beginAuthentication(): void {
    this.expectState('awaiting-start-ok', 'connection.start-ok');
    this.stateValue = 'authenticating';
    this.updateReading();
  }

  /** The login was accepted: propose our limits. */
  authenticated(username: string | undefined): void {
    if (this.stateValue !== 'authenticating') return; // closed meanwhile
    this.stateValue = 'awaiting-tune-ok';
    this.username = username;
    if (username !== undefined) this.loggerValue = this.loggerValue.child({ user: username });
    const permissions = this.context.users.amqpPermissions(username);
    const denied = this.context.accessDenied ?? ((): void => undefined);
    if (permissions !== undefined) this.access = { username, permissions, denied };
    const { limits } = this.context;
    this.sendMethod(0, { name: 'connection.tune', channelMax: limits.channelMax, frameMax: limits.frameMaxBytes, heartbeat: limits.heartbeatSeconds });
    this.updateReading();
    this.drain();
  }

  /** The login was refused (or could not be checked): 403 via connection.close, as authentication_failure_close promises. */
  refused(error: AmqpConnectionError): void {
    if (this.stateValue !== 'authenticating') return;
    this.stateValue = 'awaiting-start-ok';
    this.fail(error, 0, { classId: CLASS_ID.CONNECTION, methodId: METHOD_ID.CONNECTION.START_OK });
  }

  /** tune-ok: the negotiated values apply to every frame that follows. */
  tuned(frameMax: number, channelMax: number, heartbeatSeconds: number): void {
    this.expectState('awaiting-tune-ok', 'connection.tune-ok');
    this.frameMax = frameMax;
    this.channelMax = channelMax;
    this.reader.setFrameMax(frameMax);
    this.stateValue = 'awaiting-open';
    this.heartbeat.stop();
    this.heartbeat = new Heartbeat(heartbeatSeconds, this);
    this.logger.debug({ frameMax, channelMax, heartbeatSeconds }, 'AMQP connection tuned');
  }

  opened(): void {
    this.expectState('awaiting-open', 'connection.open');
    clearTimeout(this.handshakeTimer);
    this.stateValue = 'open';
    this.sendMethod(0, { name: 'connection.open-ok' });
    this.logger.debug('AMQP connection open');
  }

  /**
   * The client's connection.close: stop the channels, answer close-ok, hang
   * up. The channels' unacked deliveries are requeued only when the socket is
   * gone: amqplib, for one, writes acks queued before close() after the
   * connection.close frame, up to its FIN.
   */
  closeByClient(): void {
    this.logger.debug('AMQP connection closed by client');
    this.stopChannels();
    this.sendMethod(0, { name: 'connection.close-ok' });
    this.stateValue = 'closing';
    this.updateReading();
    this.endSocket();
  }

  /** Handshake methods must come in order; anything else now is 503 COMMAND_INVALID. */
  expectState(expected: ConnectionState, method: string): void {
    if (this.stateValue !== expected) {
      throw new AmqpConnectionError(REPLY_CODE.COMMAND_INVALID, `${method} is not expected now (connection state ${this.stateValue})`);
    }
  }

  // ─────────────────────────── heartbeats (HeartbeatPeer) ───────────────────────────

  sendHeartbeat(): void {
    this.write(encodeHeartbeatFrame());
  }

  silenceExcused(): boolean {
    return this.congested || this.publishBlocked;
  }

  dead(): void {
    this.logger.debug({ heartbeatSeconds: this.heartbeat.seconds }, 'AMQP client missed two heartbeat intervals, closing');
    this.socket.destroy();
  }

  // ─────────────────────────── outbound ───────────────────────────

  /**
   * Write bytes; writes in the same tick leave in one writev. A finished socket drops them. `alone` (a
   * lone confirm, publisher-confirms.ts): nothing else is expected this tick, so unless frames are
   * gathered already it is written at once, without the cork and the tick that uncorks it.
   */
  write(bytes: Buffer, alone = false): void {
    const socket = this.socket;
    if (socket.destroyed || socket.writableEnded) return;
    if (!this.corked && !alone) {
      this.corked = true;
      socket.cork();
      process.nextTick(this.uncork);
    }
    socket.write(bytes);
    this.heartbeat.wrote();
    if (!this.congested && socket.writableLength > this.context.limits.writeBufferHighWaterBytes) {
      this.congested = true;
      this.updateReading();
    }
  }

  private readonly uncork = (): void => {
    this.corked = false;
    this.socket.uncork();
  };

  sendMethod(channel: number, method: AmqpMethodInput, alone = false): void {
    this.write(encodeMethodFrame(channel, method), alone);
  }

  sendMessage(channel: number, method: ContentMethodInput, properties: Uint8Array, body: Uint8Array): void {
    this.write(encodeMessage({ channel, method, rawProperties: properties, body }, this.frameMax));
  }

  acceptsDeliveries(): boolean {
    return this.stateValue === 'open' && !this.congested;
  }

  /** The socket emptied its buffer: read again and let consumers have more. */
  private drained(): void {
    if (!this.congested || this.socket.writableLength > this.context.limits.writeBufferHighWaterBytes) return;
    this.congested = false;
    this.updateReading();
    for (const channel of [...this.channels.values()]) channel.dispatchConsumers();
  }

  private updateReading(): void {
    if (this.socket.destroyed) return;
    // A closing connection delivers nothing more: it reads on, congested or not, to see the settlements and the end.
    const reading = this.stateValue !== 'authenticating' && ((!this.congested && !this.publishBlocked) || this.stateValue === 'closing');
    if (reading && this.socket.isPaused()) this.socket.resume();
    else if (!reading && !this.socket.isPaused()) this.socket.pause();
  }

  // ─────────────────────────── publish alarm (connection.blocked) ───────────────────────────

  /**
   * A basic.publish arrived. While the publish alarm is on, this one is taken and reading stops
   * until the alarm clears, as RabbitMQ blocks a connection when it publishes during an alarm.
   */
  publishing(): void {
    this.publisher = true;
    const reason = this.context.publishAlarm?.reason;
    if (reason === undefined || this.publishBlocked) return;
    this.publishBlocked = true;
    this.notifyBlocked(reason);
    this.updateReading();
  }

  /** The alarm was raised (a reason) or cleared: publishers hear of it; a blocked connection reads again. */
  publishAlarmChanged(reason: string | undefined): void {
    if (reason !== undefined) {
      if (this.publisher) this.notifyBlocked(reason);
      return;
    }
    if (this.blockedSent) {
      this.blockedSent = false;
      if (this.stateValue === 'open') this.sendMethod(0, { name: 'connection.unblocked' });
    }
    if (this.publishBlocked) {
      this.publishBlocked = false;
      this.updateReading();
    }
  }

  private notifyBlocked(reason: string): void {
    if (!this.blockedNotifications || this.blockedSent || this.stateValue !== 'open') return;
    this.blockedSent = true;
    this.sendMethod(0, { name: 'connection.blocked', reason });
  }

  channelFinished(channel: number): void {
    this.channels.delete(channel);
  }

  // ─────────────────────────── errors and closing ───────────────────────────

  /**
   * The one place that turns an error into the wire reaction: channel.close
   * for channel errors on an open channel, connection.close otherwise.
   * `streamBroken`: the bytes cannot be parsed any more, so no close-ok can
   * be read either; hang up right after the close.
   */
  fail(error: unknown, channelNumber: number, failed?: FailedMethod, streamBroken = false): void {
    if (error instanceof AssertionError) throw error;
    if (this.stateValue === 'closed') return;
    const wire = wireErrorOf(error, failed);
    const details = { code: wire.replyCode, text: wire.replyText, channel: channelNumber, classId: wire.classId, methodId: wire.methodId };
    if (wire.internal) this.logger.error({ ...details, err: error }, 'AMQP internal error');
    else this.logger.debug(details, `AMQP ${wire.scope} error`);
    const channel = this.channels.get(channelNumber);
    if (wire.scope === 'channel' && channel !== undefined && !streamBroken) {
      channel.closeWithError(wire);
      return;
    }
    this.closeWithError(wire, streamBroken);
  }

  /** connection.close with the error, then wait (bounded) for close-ok; during the handshake or on a broken stream, hang up at once. */
  private closeWithError(wire: WireError, hangUp: boolean): void {
    if (this.stateValue === 'closing' || this.stateValue === 'closed') return;
    const handshaking = this.stateValue !== 'open';
    this.sendMethod(0, {
      name: 'connection.close', replyCode: wire.replyCode, replyText: wire.replyText,
      failedClassId: wire.classId, failedMethodId: wire.methodId,
    });
    this.stateValue = 'closing';
    this.stopChannels();
    this.updateReading();
    if (hangUp || handshaking) {
      this.endSocket();
      return;
    }
    this.closeTimer = setTimeout(() => this.socket.destroy(), this.context.limits.closeOkTimeoutMs);
    this.closeTimer.unref();
  }

  /** The broker is stopping: tell the client (320 CONNECTION_FORCED) and hang up. */
  shutdown(): void {
    this.forceClose('broker shutdown');
  }

  /** An operator closed this connection (management API): 320 CONNECTION_FORCED with their reason, as RabbitMQ does. */
  closeByOperator(reason: string): void {
    this.logger.info({ reason }, 'AMQP connection closed by an operator');
    this.forceClose(reason);
  }

  private forceClose(reason: string): void {
    if (this.stateValue === 'closed') return;
    if (this.stateValue === 'awaiting-header' || this.stateValue === 'closing') {
      this.socket.destroy();
      return;
    }
    const wire: WireError = {
      scope: 'connection', replyCode: REPLY_CODE.CONNECTION_FORCED, replyText: replyText(REPLY_CODE.CONNECTION_FORCED, reason),
      classId: 0, methodId: 0, internal: false,
    };
    this.closeWithError(wire, true);
  }

  describe(): ConnectionDescription {
    const state = this.stateValue === 'open' ? 'running' : this.stateValue === 'closing' || this.stateValue === 'closed' ? this.stateValue : 'starting';
    return {
      protocol: 'amqp', ...socketDescription(this.socket), user: this.username, connectedAt: this.connectedAt, state,
      clientProperties: plainTableOf(this.clientProperties), heartbeatSeconds: this.heartbeat.seconds, frameMax: this.frameMax, channelMax: this.channelMax,
      channels: [...this.channels.values()].map((channel) => channel.describe()),
    };
  }

  /** Flush what is written, send FIN, and destroy if the peer does not close within the linger. */
  private endSocket(last?: Buffer): void {
    const socket = this.socket;
    if (socket.destroyed) return;
    if (last !== undefined) socket.end(last);
    else socket.end();
    setTimeout(() => socket.destroy(), closeLingerMs).unref();
  }

  /** Every channel stops delivering and answering; unacked deliveries stay until releaseChannels. */
  private stopChannels(): void {
    for (const channel of this.channels.values()) channel.connectionClosing();
  }

  /** Every channel gives back its deliveries and consumers; nothing is written. */
  private releaseChannels(): void {
    const channels = [...this.channels.values()];
    this.channels.clear();
    for (const channel of channels) channel.abandon();
  }

  /** The socket is gone: runs once, whatever the reason. */
  private finalize(reason: string): void {
    if (this.stateValue === 'closed') return;
    const wasOpen = this.stateValue === 'open';
    this.stateValue = 'closed';
    clearTimeout(this.handshakeTimer);
    clearTimeout(this.closeTimer);
    this.heartbeat.stop();
    this.releaseChannels();
    this.context.core.connectionClosed(this.owner);
    this.logger.debug({ reason, wasOpen }, 'AMQP connection closed');
    this.onClosed(this);
  }
}

/** The method a frame carried, for connection.close's class-id/method-id; content frames belong to basic.publish. */
function failedMethodOf(frame: Frame): FailedMethod | undefined {
  if (frame.type === FRAME_TYPE.METHOD) {
    return frame.payload.length >= 4 ? { classId: frame.payload.readUInt16BE(0), methodId: frame.payload.readUInt16BE(2) } : undefined;
  }
  if (frame.type === FRAME_TYPE.HEADER || frame.type === FRAME_TYPE.BODY) return { classId: CLASS_ID.BASIC, methodId: METHOD_ID.BASIC.PUBLISH };
  return undefined;
}

const mechanismsText = saslMechanisms.join(' ');
let cachedServerProperties: FieldTable | undefined;

/** Built once: the table is the same for every connection. */
function serverPropertiesTable(): FieldTable {
  cachedServerProperties ??= serverProperties();
  return cachedServerProperties;
}
