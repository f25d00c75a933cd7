/**
 * MQTT 5 reason codes [MQTT-2.4], and the one mapping from Cairn's close
 * reasons and 3.1.1 CONNACK return codes to them. A 3.1.1 client never sees
 * these: its connection only has the CONNACK return codes and a close.
 */
import type { ConnackReturnCode } from './codec.js';
import type { CloseReason } from './errors.js';

export const ReasonCode = {
  success: 0x00,
  grantedQos1: 0x01,
  grantedQos2: 0x02,
  disconnectWithWill: 0x04,
  noMatchingSubscribers: 0x10,
  noSubscriptionExisted: 0x11,
  unspecifiedError: 0x80,
  malformedPacket: 0x81,
  protocolError: 0x82,
  implementationSpecificError: 0x83,
  unsupportedProtocolVersion: 0x84,
  clientIdentifierNotValid: 0x85,
  badUserNameOrPassword: 0x86,
  notAuthorized: 0x87,
  serverUnavailable: 0x88,
  serverShuttingDown: 0x8b,
  badAuthenticationMethod: 0x8c,
  keepAliveTimeout: 0x8d,
  sessionTakenOver: 0x8e,
  topicFilterInvalid: 0x8f,
  topicNameInvalid: 0x90,
  packetIdentifierNotFound: 0x92,
  receiveMaximumExceeded: 0x93,
  topicAliasInvalid: 0x94,
  packetTooLarge: 0x95,
  quotaExceeded: 0x97,
  administrativeAction: 0x98,
  payloadFormatInvalid: 0x99,
  sharedSubscriptionsNotSupported: 0x9e,
  subscriptionIdentifiersNotSupported: 0xa1,
} as const;
export type ReasonCode = (typeof ReasonCode)[keyof typeof ReasonCode];

/** The 3.1.1 CONNACK refusals and their MQTT 5 equivalents [MQTT-3.2.2.2]. */
export function connackReasonCodeOf(returnCode: Exclude<ConnackReturnCode, 0>): ReasonCode {
  switch (returnCode) {
    case 1:
      return ReasonCode.unsupportedProtocolVersion;
    case 2:
      return ReasonCode.clientIdentifierNotValid;
    case 3:
      return ReasonCode.serverUnavailable;
    case 4:
      return ReasonCode.badUserNameOrPassword;
    case 5:
      return ReasonCode.notAuthorized;
  }
}

/**
 * The reason code of the DISCONNECT a server sends a v5 client before it
 * closes [MQTT-3.14.2-1]; undefined: no DISCONNECT (the client left, the
 * socket is gone, or a CONNACK already said why).
 */
export function disconnectReasonCodeOf(reason: CloseReason): ReasonCode | undefined {
  switch (reason) {
    case 'taken-over':
      return ReasonCode.sessionTakenOver;
    case 'keep-alive-timeout':
      return ReasonCode.keepAliveTimeout;
    case 'server-closing':
      return ReasonCode.serverShuttingDown;
    case 'closed-by-operator':
      return ReasonCode.administrativeAction;
    case 'broker-error':
    case 'log-failed':
      return ReasonCode.unspecifiedError;
    case 'protocol-violation':
      return ReasonCode.protocolError;
    case 'malformed-packet':
      return ReasonCode.malformedPacket;
    case 'packet-too-large':
      return ReasonCode.packetTooLarge;
    case 'client-disconnect':
    case 'socket-closed':
    case 'socket-error':
    case 'connect-timeout':
    case 'connect-refused':
      return undefined;
  }
}
