/**
 * What can go wrong on an MQTT connection, as typed errors. Handlers throw
 * them; only the connection (connection.ts, `fail`) turns them into the wire
 * reaction: a CONNACK return code and close, or just a close. MQTT 3.1.1 has
 * no other way to report an error to a client; an MQTT 5 client also gets a
 * DISCONNECT with a reason code (reason-codes.ts) before the close.
 */
import type { ConnackReturnCode } from './codec.js';
import type { ReasonCode } from './reason-codes.js';

/** Why a connection ended; logged, and decides whether the will is published. */
export type CloseReason =
  | 'client-disconnect'
  | 'taken-over'
  | 'socket-closed'
  | 'socket-error'
  | 'keep-alive-timeout'
  | 'connect-timeout'
  | 'connect-refused'
  | 'protocol-violation'
  | 'malformed-packet'
  | 'packet-too-large'
  | 'broker-error'
  | 'log-failed'
  | 'closed-by-operator'
  | 'server-closing';

/**
 * A close is normal after DISCONNECT, a takeover [MQTT-3.1.4-2], or when the
 * broker itself shuts down (its log is closing; a will could not be recorded
 * anyway). Every other close publishes the will [MQTT-3.1.2-8].
 */
export function isNormalClose(reason: CloseReason): boolean {
  return reason === 'client-disconnect' || reason === 'taken-over' || reason === 'server-closing';
}

/** The client broke a rule of the protocol: close the connection (the will fires). */
export class MqttProtocolError extends Error {
  override readonly name = 'MqttProtocolError';
  readonly code: 'protocol-violation' | 'malformed-packet' | 'packet-too-large';
  constructor(
    message: string,
    code: 'protocol-violation' | 'malformed-packet' | 'packet-too-large' = 'protocol-violation',
    /** The offending packet's type, when it could be decoded that far. */
    readonly packetType?: string,
    /** The MQTT 5 DISCONNECT reason code, when it is more precise than the one `code` gives (e.g. 0x94 topic alias invalid). */
    readonly reasonCode?: ReasonCode,
  ) {
    super(message);
    this.code = code;
  }
}

/** CONNECT refused: send CONNACK with this return code, then close. */
export class MqttConnectRefusedError extends Error {
  override readonly name = 'MqttConnectRefusedError';
  readonly code = 'connect-refused';
  constructor(
    readonly returnCode: Exclude<ConnackReturnCode, 0>,
    message: string,
    /** The MQTT 5 CONNACK reason code, when 3.1.1 has no return code for the refusal (e.g. 0x8C bad authentication method). */
    readonly reasonCode?: ReasonCode,
  ) {
    super(message);
  }
}

/** A Durable rejected: the log has failed. Close without acknowledging anything. */
export class MqttLogFailedError extends Error {
  override readonly name = 'MqttLogFailedError';
  readonly code = 'log-failed';
  constructor(
    message: string,
    override readonly cause: unknown,
  ) {
    super(message);
  }
}
