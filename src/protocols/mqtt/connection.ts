/**
 * One MQTT 3.1.1 or MQTT 5 connection: bytes in → framer → codec → one flat dispatch on
 * the packet type → one handler per packet (handlers/); packets out through
 * `write`, gathered per tick and handed to the socket as one write (outgoing-packets.ts).
 *
 * Life cycle:  awaiting-connect ──CONNECT──▶ connecting ──CONNACK 0──▶ connected ──▶ closed
 *                     └──────────────── any failure, from any state ─────────────────▶ closed
 *
 * Invariants:
 * - The first packet must be CONNECT [MQTT-3.1.0-1] and there is only one
 *   [MQTT-3.1.0-2]; while `connecting` (authentication and the session's
 *   records) the socket is paused and no packet is dispatched.
 * - No acknowledgement is written before its Durable resolves; a rejected
 *   Durable closes the connection without acknowledging (the log failed).
 * - Packets are handled in the order they were read, all of them: when the
 *   peer closes while some still wait in the framer (the connection was
 *   yielding its turn), they are handled before the close (`peerGone`).
 * - Only `fail` turns errors into wire reactions (CONNACK code or close), and
 *   only `close` ends the connection: it runs once, detaches the session, and
 *   publishes the will unless the close was a DISCONNECT (after a takeover
 *   the core decides, see takenOver).
 * - The protocol level is fixed by the CONNECT: `encoder` writes every packet
 *   at that level; an MQTT 5 client is told why the server closes (a CONNACK
 *   or DISCONNECT reason code, reason-codes.ts) before the close.
 */
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { AssertionError, assert } from '../../assert.js';
import {
  BrokerError, type Durable, type MqttClientLink, type MqttCore, type MqttOutgoingPublish, type MqttSessionHandle, type MqttWill, type Qos,
} from '../../core/api.js';
import type { AclSource } from '../../auth/acl-file.js';
import type { Users } from '../../auth/users.js';
import { socketDescription, type ConnectionDescription, type DescribedTransport, type ManagedConnection } from '../connection-description.js';
import { PacketDecoder, peekConnectProtocol, type ClientPacket, type ProtocolVersion } from './codec.js';
import { isNormalClose, MqttConnectRefusedError, MqttLogFailedError, MqttProtocolError, type CloseReason } from './errors.js';
import { PacketFramer } from './framer.js';
import { OutgoingPackets } from './outgoing-packets.js';
import { checkConnectProtocol, handleConnect } from './handlers/connect.js';
import { handleDisconnect } from './handlers/disconnect.js';
import { handlePingreq } from './handlers/pingreq.js';
import { handlePuback } from './handlers/puback.js';
import { handlePubcomp } from './handlers/pubcomp.js';
import { handlePublish } from './handlers/publish.js';
import { handlePubrec } from './handlers/pubrec.js';
import { handlePubrel } from './handlers/pubrel.js';
import { handleSubscribe } from './handlers/subscribe.js';
import { handleUnsubscribe } from './handlers/unsubscribe.js';
import type { MqttLimits } from './limits.js';
import { encoder311, encoderFor, type ConnackProperties, type PacketEncoder } from './packet-encoder.js';
import { outgoingPacketPropertiesOf } from './publish-properties.js';
import { disconnectReasonCodeOf, ReasonCode } from './reason-codes.js';
import { OutboundTopicAliases } from './outbound-topic-aliases.js';
import { InboundTopicAliases } from './topic-aliases.js';
import { unrestrictedTopicAccess, type AccessDeniedListener, type MqttTopicAccess } from './topic-access.js';
import { markStage, Stage } from '../../stage-timing.js';
import { lendSocketBytes, type SocketReadMode } from '../socket-reads.js';
import type { SocketWriter } from '../socket-writes.js';

/** What every connection of one server shares. */
export interface MqttConnectionContext {
  readonly core: MqttCore;
  readonly users: Users;
  readonly limits: MqttLimits;
  readonly logger: Logger;
  /** Topic ACL (--acl); absent: every topic is open to every client that logged in. */
  readonly acl?: AclSource | undefined;
  readonly accessDenied?: AccessDeniedListener | undefined;
}

/**
 * What a connection reads packets from and writes them to: a TCP or TLS
 * socket, or a WebSocket seen as a stream (websocket-stream.ts). Sockets
 * come with TCP_NODELAY set by their listener.
 */
export type MqttTransport = Duplex & DescribedTransport;

/** A connection's will: its MQTT 5 properties travel with the message [MQTT-3.1.3.2]; its delay is the core's to keep. */
export type Will = MqttWill;

export type ConnectionState = 'awaiting-connect' | 'connecting' | 'connected' | 'closed';

/** CONNECT's type 1 with the reserved flags 0000 [MQTT-2.2.2-1]. */
const connectFirstByte = 0x10;

/** Keep-alive checks per timeout: a silent client is closed at most 1/8 of the timeout late. */
const keepAliveChecks = 8;

/** How long a closing socket may take to flush its last packets (a refusing CONNACK) before it is destroyed. */
const closeLingerMs = 1_000;

export class MqttConnection implements MqttClientLink, ManagedConnection {
  private stateValue: ConnectionState = 'awaiting-connect';
  private sessionValue: MqttSessionHandle | undefined;
  private clientIdValue: string | undefined;
  private will: Will | undefined;
  private readonly framer: PacketFramer;
  private readonly decoder = new PacketDecoder();
  private connectTimer: NodeJS.Timeout | undefined;
  /** The keep-alive's periodic check (startKeepAlive); a packet sets the flag it reads. */
  private keepAliveTimer: NodeJS.Timeout | undefined;
  private packetSinceKeepAliveCheck = false;
  /** The Durable of the newest acknowledgement still awaited (whenDurable). */
  private lastAwaited: Durable;
  /** Packets written in this tick, handed to the socket at its end (or at the end of the read that wrote them). */
  private readonly outgoing: OutgoingPackets;
  /** Inside drainAndFlush: the drain's end flushes what the packets wrote. */
  private draining = false;
  /** Sending the last acknowledgement awaited, which is flushed right after (whenDurable): a write schedules no flush. */
  private sendingLastAwaited = false;
  /** Acknowledgements waiting for their Durable; reading stops at inboundAcksPendingMax. */
  private acksPending = 0;
  private readingPaused = false;
  /** This connection used up its packetsPerTurnMax and waits for the next turn of the event loop. */
  private yielding = false;
  /** QoS 0 deliveries dropped because the socket was congested: counted and logged, never silent. */
  private droppedDeliveries = 0;
  private loggerValue: Logger;
  private readonly connectedAt = Date.now();
  private username: string | undefined = undefined;
  /** Set at CONNECT, once the user name is known. */
  topicAccess: MqttTopicAccess = unrestrictedTopicAccess;
  /** Writes packets at the CONNECT's protocol level (3.1.1 until a v5 CONNECT arrives). */
  encoder: PacketEncoder = encoder311;
  /** MQTT 5: the topic aliases this client set up (none in 3.1.1). */
  topicAliases = new InboundTopicAliases(0);
  /** MQTT 5: the topic aliases this server sets up towards the client, when its CONNECT allowed some. */
  outboundTopicAliases: OutboundTopicAliases | undefined = undefined;
  /** MQTT 5: the client's Receive Maximum, the most QoS 1/2 deliveries it takes unacknowledged; the core's window is at most this. */
  inflightMax: number | undefined = undefined;
  /** MQTT 5: the largest packet the client accepts [MQTT-3.1.2-24]. */
  clientPacketBytesMax: number | undefined = undefined;
  /** MQTT 5: the CONNECT's Session Expiry Interval (s); a DISCONNECT may change it, though not from 0 [MQTT-3.14.2-2]. */
  sessionExpiryInterval: number | undefined = undefined;
  /** MQTT 5: ids of the client's QoS 1/2 PUBLISHes not yet finished (PUBACK or PUBCOMP sent), bounded by our Receive Maximum. */
  private readonly inboundUnfinished = new Set<number>();
  /** A plain TCP socket is read directly into a shared buffer; any other transport through its 'data' events (socket-reads.ts). */
  readonly readMode: SocketReadMode;

  /** A plain TCP socket is written through its handle while its Writable holds nothing (socket-writes.ts). */
  get socketWriter(): SocketWriter {
    return this.outgoing.socketWriter;
  }

  constructor(
    readonly socket: MqttTransport,
    readonly context: MqttConnectionContext,
    private readonly onClosed: (connection: MqttConnection, reason: CloseReason) => void,
    /** The user name a verified TLS client certificate gives this connection (--tls-identity-as-username): it replaces CONNECT's user name and password. */
    readonly certificateIdentity?: string,
  ) {
    this.loggerValue = context.logger.child({ remote: `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}` });
    this.framer = new PacketFramer(context.limits.packetBytesMax);
    this.outgoing = new OutgoingPackets(socket);
    this.readMode = lendSocketBytes(socket, (chunk) => this.receive(chunk));
    socket.on('error', (error: Error) => {
      this.logger.debug({ err: error.message }, 'MQTT socket error');
      this.peerGone('socket-error');
    });
    socket.on('close', () => this.peerGone('socket-closed'));
    this.connectTimer = setTimeout(() => this.close('connect-timeout'), context.limits.connectTimeoutMs);
    this.connectTimer.unref();
  }

  /** The connection's logger: it names the remote address and, once known, the client id. */
  get logger(): Logger {
    return this.loggerValue;
  }

  get state(): ConnectionState {
    return this.stateValue;
  }

  get isClosed(): boolean {
    return this.stateValue === 'closed';
  }

  get clientId(): string | undefined {
    return this.clientIdValue;
  }

  get protocolVersion(): ProtocolVersion {
    return this.encoder.protocolVersion;
  }

  /** The session of a connected client; handlers of post-CONNECT packets may rely on it. */
  get session(): MqttSessionHandle {
    // Once per packet: the message is only built when the invariant breaks.
    if (this.sessionValue === undefined || this.stateValue !== 'connected') throw new AssertionError(`no session in state ${this.stateValue}`);
    return this.sessionValue;
  }

  // ─────────────────────────── inbound ───────────────────────────

  /**
   * `chunk` may be lent (a view of the shared read buffer, socket-reads.ts): the packets handled
   * here use it only while they are handled (the core copies a payload it keeps), and what the
   * framer still holds of it afterwards is copied before the next read.
   */
  private receive(chunk: Buffer): void {
    markStage(Stage.read);
    if (this.stateValue === 'closed') return;
    this.framer.push(chunk);
    // While yielding, the rest of this read waits for our next turn.
    if (!this.yielding) this.drainAndFlush();
    this.framer.ownHeldBytes(chunk);
  }

  /**
   * Drain, then hand what the packets wrote to the socket right away: the
   * acknowledgements and deliveries of one read leave in one write, in this
   * same callback — no extra tick between a PUBLISH and its PUBACK.
   */
  private drainAndFlush(): void {
    if (this.draining) return this.drain(); // an outer drain of this read flushes at its end
    this.draining = true;
    try {
      this.drain();
    } finally {
      this.draining = false;
      this.flush();
    }
  }

  /**
   * Dispatch the whole packets buffered, as long as the state lets packets
   * through, but at most packetsPerTurnMax of them: then yield the event loop
   * (setImmediate) so that other connections get their turn. Without this, a
   * publisher whose socket holds megabytes (libuv reads up to 32 × 64 KiB per
   * readable event) is served to the end while its subscribers' PUBACKs wait
   * unread, their in-flight windows stay full and their queues overflow.
   */
  private drain(): void {
    let budget = this.context.limits.packetsPerTurnMax;
    while ((this.stateValue === 'awaiting-connect' || this.stateValue === 'connected') && !this.readingPaused) {
      if (budget === 0) {
        this.yieldTurn();
        return;
      }
      const bytes = this.nextPacket();
      if (bytes === undefined) return;
      // Any packet counts as activity for the keep-alive [MQTT-3.1.2-23]: a flag its next check reads.
      this.packetSinceKeepAliveCheck = true;
      budget -= 1;
      this.handlePacket(bytes);
    }
  }

  /**
   * The peer is gone (FIN, reset, socket error) while packets it sent before
   * still wait in the framer (this connection was yielding its turn, or paused
   * for the log). They are handled now, in order, before close() lets the
   * session's in-flight messages go: a PUBACK that reached us is applied and
   * recorded, never forgotten. Bounded: the framer holds at
   * most what was read before reading stopped.
   */
  private peerGone(reason: 'socket-closed' | 'socket-error'): void {
    while (this.stateValue === 'connected') {
      const bytes = this.nextPacket();
      if (bytes === undefined) break;
      this.handlePacket(bytes);
    }
    this.close(reason);
  }

  /** The next whole packet from the framer; undefined when more bytes are needed or the stream is bad (then closed). */
  private nextPacket(): Buffer | undefined {
    // Refuse a stream that cannot start with CONNECT at its first byte,
    // rather than wait for a body whose length is garbage [MQTT-3.1.0-1].
    const firstByte = this.framer.peekFirstByte();
    if (this.stateValue === 'awaiting-connect' && firstByte !== undefined && firstByte !== connectFirstByte) {
      this.fail(new MqttProtocolError(`first packet must be CONNECT, got first byte 0x${firstByte.toString(16)} [MQTT-3.1.0-1]`));
      return undefined;
    }
    const frame = this.framer.next();
    switch (frame.kind) {
      case 'packet':
        return frame.bytes;
      case 'need-more':
        return undefined;
      case 'too-large':
        this.fail(new MqttProtocolError(`packet of ${frame.packetBytes} bytes exceeds packetBytesMax (${this.context.limits.packetBytesMax})`, 'packet-too-large'));
        return undefined;
      case 'malformed':
        this.fail(new MqttProtocolError(frame.reason, 'malformed-packet'));
        return undefined;
    }
  }

  /** Decode one whole packet and dispatch it; every error it raises goes through fail(). */
  private handlePacket(bytes: Buffer): void {
    try {
      if (this.stateValue === 'awaiting-connect') {
        checkConnectProtocol(bytes);
        // From here on a refusal of this CONNECT is answered at its level (a v5 CONNACK reason code).
        if (peekConnectProtocol(bytes)?.level === 5) this.encoder = encoderFor(5);
      }
      const decoded = this.decoder.decode(bytes);
      if (decoded.kind === 'malformed') {
        const code = decoded.reasonCode === ReasonCode.protocolError ? 'protocol-violation' : 'malformed-packet';
        throw new MqttProtocolError(decoded.reason, code, undefined, decoded.reasonCode);
      }
      this.dispatch(decoded.packet);
    } catch (error: unknown) {
      this.fail(error);
    }
  }

  /** Stop reading until the next turn of the event loop; the framer keeps what was already read. */
  private yieldTurn(): void {
    this.yielding = true;
    this.socket.pause();
    setImmediate(this.endTurn);
  }

  private readonly endTurn = (): void => {
    this.yielding = false;
    if (this.stateValue === 'closed') return;
    if (!this.readingPaused && this.stateValue === 'connected') this.socket.resume();
    this.drainAndFlush();
  };

  /** The one flat dispatch: packet type → handler. */
  private dispatch(packet: ClientPacket): void {
    if (this.stateValue === 'awaiting-connect' && packet.cmd !== 'connect') {
      throw new MqttProtocolError(`first packet must be CONNECT, got ${packet.cmd.toUpperCase()} [MQTT-3.1.0-1]`, 'protocol-violation', packet.cmd);
    }
    switch (packet.cmd) {
      case 'connect':
        if (this.stateValue !== 'awaiting-connect') {
          throw new MqttProtocolError('second CONNECT on a connection [MQTT-3.1.0-2]', 'protocol-violation', 'connect');
        }
        handleConnect(this, packet).catch((error: unknown) => this.fail(error));
        return;
      case 'publish':
        return handlePublish(this, packet);
      case 'puback':
        return handlePuback(this, packet);
      case 'pubrec':
        return handlePubrec(this, packet);
      case 'pubrel':
        return handlePubrel(this, packet);
      case 'pubcomp':
        return handlePubcomp(this, packet);
      case 'subscribe':
        return handleSubscribe(this, packet);
      case 'unsubscribe':
        return handleUnsubscribe(this, packet);
      case 'pingreq':
        return handlePingreq(this);
      case 'disconnect':
        return handleDisconnect(this, packet);
      case 'auth':
        // Enhanced authentication is not implemented: a CONNECT with a method got CONNACK 0x8C [MQTT-4.12.0-1], so
        // no connected client asked for it and an AUTH is a protocol error (0x8C is not a DISCONNECT reason code).
        throw new MqttProtocolError('AUTH without an authentication method in CONNECT [MQTT-4.12.0-2]', 'protocol-violation', 'auth', ReasonCode.protocolError);
    }
  }

  // ───────────────────── CONNECT life cycle (for handlers/connect.ts) ─────────────────────

  /** CONNECT received: stop reading until it is settled (authentication and records take a while). */
  beginConnect(): void {
    assert(this.stateValue === 'awaiting-connect', `beginConnect in state ${this.stateValue}`);
    this.stateValue = 'connecting';
    clearTimeout(this.connectTimer);
    this.socket.pause();
  }

  /** core.connect returned: from now on a close detaches the session and may publish the will. */
  attach(clientId: string, session: MqttSessionHandle, will: Will | undefined, username: string | undefined): void {
    assert(this.stateValue === 'connecting' && this.sessionValue === undefined, `attach in state ${this.stateValue}`);
    this.clientIdValue = clientId;
    this.username = username;
    this.sessionValue = session;
    this.will = will;
    this.loggerValue = this.loggerValue.child({ clientId });
  }

  /** The session's records are durable: CONNACK 0 (with its v5 properties), start the session, read on. */
  accepted(sessionPresent: boolean, keepAliveSeconds: number, properties: ConnackProperties = {}): void {
    assert(this.stateValue === 'connecting' && this.sessionValue !== undefined, `accepted in state ${this.stateValue}`);
    this.write(this.encoder.connack(sessionPresent, properties));
    this.stateValue = 'connected';
    this.startKeepAlive(keepAliveSeconds);
    this.logger.debug({ sessionPresent, keepAliveSeconds }, 'MQTT client connected');
    // CONNACK is in the write buffer first, so resent and queued PUBLISHes follow it.
    this.sessionValue.start();
    if (this.stateValue !== 'connected' || this.yielding) return;
    this.socket.resume();
    this.drainAndFlush();
  }

  describe(): ConnectionDescription {
    const state = this.stateValue === 'connected' ? 'running' : this.stateValue === 'closed' ? 'closed' : 'starting';
    return {
      protocol: 'mqtt', ...socketDescription(this.socket), user: this.username, connectedAt: this.connectedAt, state, channels: [],
      ...(this.clientIdValue !== undefined ? { clientId: this.clientIdValue } : {}),
    };
  }

  /** An operator closed this connection (management API): as an abnormal close, so the will is published [MQTT-3.1.2-8]. */
  closeByOperator(reason: string): void {
    this.logger.info({ reason }, 'MQTT connection closed by an operator');
    this.close('closed-by-operator');
  }

  /** DISCONNECT: the will is discarded [MQTT-3.14.4-3], unless a v5 client asked for it (reason 0x04) [MQTT-3.14.2.1]. */
  disconnect(publishWill = false, sessionExpiryInterval?: number): void {
    if (sessionExpiryInterval !== undefined) {
      if (this.sessionExpiryInterval === 0 && sessionExpiryInterval !== 0) {
        throw new MqttProtocolError('DISCONNECT sets a session expiry after CONNECT set 0 [MQTT-3.14.2-2]', 'protocol-violation', 'disconnect');
      }
      this.sessionExpiryInterval = sessionExpiryInterval;
    }
    // Kept only when asked for: close() then publishes it as after an abnormal close.
    if (!publishWill) this.will = undefined;
    this.close('client-disconnect');
  }

  /**
   * MQTT 5 Receive Maximum [MQTT-3.3.4-9]: a QoS 1/2 PUBLISH starts; one past
   * the maximum we announced is a protocol error 0x93. A resent QoS 2 id is the same flow.
   */
  beginInboundPublish(packetId: number): void {
    if (this.protocolVersion !== 5) return;
    this.inboundUnfinished.add(packetId);
    const receiveMaximum = this.context.limits.inboundAcksPendingMax;
    if (this.inboundUnfinished.size > receiveMaximum) {
      throw new MqttProtocolError(`more than ${receiveMaximum} unacknowledged QoS 1/2 PUBLISHes [MQTT-3.3.4-9]`, 'protocol-violation', 'publish', ReasonCode.receiveMaximumExceeded);
    }
  }

  /** The PUBACK or PUBCOMP of an inbound flow was written. */
  endInboundPublish(packetId: number): void {
    // Only MQTT 5 counts them (beginInboundPublish).
    if (this.protocolVersion === 5) this.inboundUnfinished.delete(packetId);
  }

  /**
   * [MQTT-3.1.2-24] Closes a connection silent for 1.5 × its keep-alive: a
   * check every 1/keepAliveChecks of that time counts the checks in a row that
   * saw no packet, and the last of keepAliveChecks of them closes. A packet
   * only sets a flag: moving a timer on every read cost more than the rest of
   * the read's MQTT work. The close comes between 1 and 1 + 1/keepAliveChecks
   * times the timeout after the last packet, never before.
   */
  private startKeepAlive(keepAliveSeconds: number): void {
    // Zero turns the mechanism off [MQTT-3.1.2-10].
    if (keepAliveSeconds === 0) return;
    const timeoutMs = keepAliveSeconds * 1000 * this.context.limits.keepAliveGraceFactor;
    let silentChecks = 0;
    this.packetSinceKeepAliveCheck = false;
    this.keepAliveTimer = setInterval(() => {
      if (this.packetSinceKeepAliveCheck) {
        this.packetSinceKeepAliveCheck = false;
        silentChecks = 0;
        return;
      }
      silentChecks += 1;
      if (silentChecks < keepAliveChecks) return;
      this.logger.debug({ keepAliveSeconds }, 'MQTT keep-alive expired [MQTT-3.1.2-24]');
      this.close('keep-alive-timeout');
    }, timeoutMs / keepAliveChecks);
    this.keepAliveTimer.unref();
  }

  // ─────────────────────────── outbound ───────────────────────────

  /** Write a packet; writes in the same tick leave in one socket write. A closed connection drops it. */
  write(bytes: Buffer): void {
    if (!this.writable) return;
    if (this.outgoing.add(bytes)) this.firstPacketWritten();
  }

  private get writable(): boolean {
    return this.stateValue !== 'closed' && !this.socket.destroyed && !this.socket.writableEnded;
  }

  /** The first packet of a tick outside a drain (a delivery, an ack whose Durable resolved) flushes at the tick's end. */
  private firstPacketWritten(): void {
    if (!this.draining && !this.sendingLastAwaited) process.nextTick(this.flush);
  }

  private readonly flush = (): void => {
    markStage(Stage.flushBegun);
    if (this.outgoing.flush()) markStage(Stage.ackWritten);
  };

  /** Some acknowledgement still waits for its Durable: a later one must wait too (whenDurable). */
  get awaitsAcknowledgements(): boolean {
    return this.acksPending > 0;
  }

  /**
   * Run `send` once `durable` resolves (at once when there is nothing to
   * wait for). If the log failed, close without acknowledging anything.
   */
  whenDurable(durable: Durable, what: string, send: () => void): void {
    // [MQTT-4.6.0-2] Acknowledgements leave in the order of their packets: one with nothing of its own to wait
    // for still waits for the last one awaited (durables settle in log order, and its callbacks in turn).
    const awaited = durable ?? (this.acksPending > 0 ? this.lastAwaited : undefined);
    if (awaited === undefined) {
      send();
      return;
    }
    this.lastAwaited = awaited;
    this.acksPending += 1;
    if (this.acksPending >= this.context.limits.inboundAcksPendingMax) this.pauseReading();
    awaited.then(
      () => {
        this.acksPending -= 1;
        if (this.stateValue !== 'connected') return;
        // The last acknowledgement awaited leaves now, not a tick later: no other one of this sync is still to come
        // (they resolve together, in order), so nothing is lost by not waiting for them.
        if (this.acksPending === 0 && !this.draining) {
          this.sendingLastAwaited = true;
          try {
            send();
          } finally {
            this.sendingLastAwaited = false;
          }
          this.flush();
        } else {
          send();
        }
        if (this.readingPaused && this.acksPending <= this.context.limits.inboundAcksPendingMax / 2) this.resumeReading();
      },
      (error: unknown) => {
        this.acksPending -= 1;
        this.fail(new MqttLogFailedError(`${what}: the log failed, not acknowledging`, error));
      },
    );
  }

  /**
   * MQTT 3.1.1 has no receive window: a client may send PUBLISHes faster than
   * the log makes them durable. Past a bound of unanswered ones we stop
   * reading, and TCP pushes back on the client.
   */
  private pauseReading(): void {
    if (this.readingPaused) return;
    this.readingPaused = true;
    this.socket.pause();
  }

  private resumeReading(): void {
    this.readingPaused = false;
    if (this.yielding) return; // endTurn resumes and drains
    this.socket.resume();
    this.drainAndFlush();
  }

  /**
   * MqttClientLink. A QoS 0 delivery to a congested socket is dropped, not
   * buffered, and reported with false. QoS 1/2 deliveries are always written:
   * the core's in-flight window bounds them, and the core must know they left.
   */
  sendPublish(publish: MqttOutgoingPublish): boolean {
    if (this.stateValue !== 'connected') return false;
    const congested = this.socket.writableLength + this.outgoing.bytes > this.context.limits.writeBufferHighWaterBytes;
    if (congested && publish.qos === 0) {
      if (this.droppedDeliveries === 0) {
        this.logger.warn({ writableBytes: this.socket.writableLength }, 'MQTT client is not keeping up: dropping QoS 0 deliveries');
      }
      this.droppedDeliveries += 1;
      return false;
    }
    let properties = this.protocolVersion === 5 ? outgoingPacketPropertiesOf(publish.properties, publish.subscriptionIdentifiers) : undefined;
    let onWire = publish;
    const aliases = this.outboundTopicAliases;
    if (aliases !== undefined) {
      const { topic, alias } = aliases.use(publish.topic);
      onWire = { ...publish, topic };
      properties = { ...properties, topicAlias: alias };
    }
    if (!this.writable) return true;
    const first = this.outgoing.isEmpty;
    // Written in place, into the buffer the socket is then given (outgoing-packets.ts): the payload may be lent.
    const packetBytes = this.encoder.writePublish(this.outgoing, onWire, properties, this.clientPacketBytesMax);
    if (this.clientPacketBytesMax !== undefined && packetBytes > this.clientPacketBytesMax) {
      // Not sent, so the client never saw this alias bound: the next PUBLISH to the topic names it again.
      aliases?.forget(publish.topic);
      // [MQTT-3.1.2-25]: discarded as if it had been delivered; a QoS 1/2 one is finished so it does not hold the window.
      this.logger.debug({ topic: publish.topic, packetBytes, clientMax: this.clientPacketBytesMax }, 'MQTT PUBLISH larger than the client accepts: discarded [MQTT-3.1.2-25]');
      const packetId = publish.packetId;
      if (packetId !== undefined) queueMicrotask(() => { if (this.stateValue === 'connected') this.session.puback(packetId); });
      return true;
    }
    if (first) this.firstPacketWritten();
    return true;
  }


  sendPubrel(packetId: number): void {
    if (this.stateValue !== 'connected') return;
    this.write(this.encoder.pubrel(packetId));
  }

  /**
   * [MQTT-3.1.4-2] A newer connection took the client id: go at once. The will goes to the core, which
   * publishes it or not by the new connection's terms (MQTT 5 section 3.1.4): this connection no longer owns the session.
   */
  takenOver(): Will | undefined {
    this.logger.debug('MQTT session taken over by a new connection [MQTT-3.1.4-2]');
    const will = this.stateValue === 'connected' ? this.will : undefined;
    this.close('taken-over');
    return will;
  }

  /** A queued message could not be read from the log: close this connection (it stays queued; the broker stays up). */
  readFailed(error: Error): void {
    this.logger.error({ err: error }, 'MQTT closing connection: a queued message could not be read from the log');
    this.close('broker-error');
  }

  // ─────────────────────────── errors and closing ───────────────────────────

  /** The one place that turns an error into the wire reaction. Assertions are never caught. */
  fail(error: unknown): void {
    if (error instanceof AssertionError) throw error;
    if (this.stateValue === 'closed') return;
    if (error instanceof MqttConnectRefusedError) {
      this.logger.debug({ returnCode: error.returnCode, reasonCode: error.reasonCode, reason: error.message }, 'MQTT CONNECT refused');
      this.write(this.encoder.connackRefused(error.returnCode, error.reasonCode, error.message));
      this.close('connect-refused');
    } else if (error instanceof MqttProtocolError) {
      this.logger.debug({ code: error.code, packet: error.packetType, reason: error.message, reasonCode: error.reasonCode }, 'MQTT protocol error, closing');
      if (this.stateValue !== 'connected' && this.protocolVersion === 5) {
        // A bad v5 CONNECT is answered with CONNACK and its reason code [MQTT-3.2.2.2], then closed.
        this.write(this.encoder.connackRefused(1, error.reasonCode ?? disconnectReasonCodeOf(error.code), error.message));
        this.close('connect-refused');
        return;
      }
      this.close(error.code, error.reasonCode, error.message);
    } else if (error instanceof MqttLogFailedError) {
      this.logger.error({ err: error.cause, reason: error.message }, 'MQTT closing connection: the log failed');
      this.close('log-failed');
    } else if (error instanceof BrokerError) {
      this.logger.warn({ code: error.code, reason: error.message }, 'MQTT closing connection: broker refused a command');
      this.close('broker-error');
    } else {
      this.logger.error({ err: error }, 'MQTT unexpected error, closing connection');
      this.close('broker-error');
    }
  }

  /**
   * Ends the connection once: tell a v5 client why (DISCONNECT), detach the
   * session, publish the will after an abnormal close, release the socket.
   */
  close(reason: CloseReason, reasonCode?: ReasonCode, reasonString?: string): void {
    if (this.stateValue === 'closed') return;
    // The will belongs to an accepted connection: one that never got its CONNACK has none.
    const wasConnected = this.stateValue === 'connected';
    const disconnectCode = wasConnected ? (reasonCode ?? disconnectReasonCodeOf(reason)) : undefined;
    const disconnect = disconnectCode === undefined ? undefined : this.encoder.disconnect(disconnectCode, reasonString);
    if (disconnect !== undefined) this.write(disconnect);
    this.stateValue = 'closed';
    clearTimeout(this.connectTimer);
    clearInterval(this.keepAliveTimer);
    const session = this.sessionValue;
    const will = this.will;
    this.sessionValue = undefined;
    this.will = undefined;
    // A DISCONNECT kept the will only if it asked for it (0x04).
    const publishWill = wasConnected && will !== undefined && (reason === 'client-disconnect' || !isNormalClose(reason));
    // After a takeover the session belongs to the new connection: leave it alone.
    if (session !== undefined && reason !== 'taken-over') this.detachSession(session, publishWill ? will : undefined);
    this.releaseSocket(reason, disconnect !== undefined);
    this.logger.debug({ reason, droppedDeliveries: this.droppedDeliveries }, 'MQTT connection closed');
    this.onClosed(this, reason);
  }

  /** The session goes offline (or ends); the will is handed over to be published now or after its delay [MQTT-3.1.2-8]. */
  private detachSession(session: MqttSessionHandle, will: Will | undefined): void {
    if (will !== undefined) this.logger.debug({ topic: will.topic, qos: will.qos, retain: will.retain, delay: will.delayInterval }, 'MQTT will due [MQTT-3.1.2-8]');
    try {
      const durable = session.detach(this.sessionExpiryInterval, will);
      durable?.catch((error: unknown) => this.logger.error({ err: error }, 'MQTT will not recorded: the log failed'));
    } catch (error: unknown) {
      if (error instanceof AssertionError) throw error;
      this.logger.warn({ err: error }, 'MQTT will refused by the broker');
    }
  }

  private releaseSocket(reason: CloseReason, disconnectSent: boolean): void {
    const socket = this.socket;
    if (socket.destroyed) return;
    // What this tick wrote (acks of the packets before a bad one, a refusing CONNACK, a DISCONNECT) goes first.
    this.outgoing.flush();
    // A refusing CONNACK, a server DISCONNECT (or the last acks before the
    // client's DISCONNECT) must reach the client before the FIN; everything else goes at once.
    if (reason === 'connect-refused' || reason === 'client-disconnect' || disconnectSent) {
      socket.end();
      socket.once('finish', () => socket.destroy());
      setTimeout(() => socket.destroy(), closeLingerMs).unref();
    } else {
      socket.destroy();
    }
  }
}
