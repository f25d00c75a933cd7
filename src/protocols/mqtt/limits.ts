/**
 * Every bound the MQTT front end enforces, as named constants with the unit
 * last. The server takes a partial override and checks the result once, at
 * start-up (checkMqttLimits), so a bad value stops the broker before it
 * accepts a single connection. The values come from the operator (flags), so
 * a bad one is a MqttLimitError naming the limit, not an assertion.
 */

export class MqttLimitError extends Error {
  override readonly name = 'MqttLimitError';
  readonly code = 'EMQTTLIMIT';
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new MqttLimitError(`MQTT limit: ${message}`);
}

export interface MqttLimits {
  /**
   * The largest packet (fixed header included) a client may send. The framer
   * checks the remaining length before buffering the body, so a client cannot
   * make the broker allocate more than this per connection.
   */
  readonly packetBytesMax: number;
  /**
   * A connection that sends no packet within keepAlive × this factor seconds
   * is closed as abnormal (the will fires) [MQTT-3.1.2-24]; the spec says one
   * and a half times.
   */
  readonly keepAliveGraceFactor: number;
  /**
   * Bytes the socket may hold unsent before the connection reports itself
   * congested: QoS 0 deliveries are then dropped instead of buffered, so a
   * slow subscriber cannot make the broker buffer without bound.
   */
  readonly writeBufferHighWaterBytes: number;
  /**
   * Acknowledgements (PUBACK, PUBREC, PUBCOMP, SUBACK, UNSUBACK) one
   * connection may have waiting for the log; at this many the connection
   * stops reading until half of them are sent.
   */
  readonly inboundAcksPendingMax: number;
  /**
   * Packets one connection may process before it yields the event loop to
   * the others (the rest of what it has read waits for the next turn), so a
   * flooding publisher cannot starve its subscribers' PUBACKs.
   */
  readonly packetsPerTurnMax: number;
  /** A TCP connection must send its CONNECT within this time, or it is closed. */
  readonly connectTimeoutMs: number;
  /** Live connections (connected or still handshaking); the next one is closed at once. */
  readonly connectionsMax: number;
  /** Topic filters in one SUBSCRIBE or UNSUBSCRIBE. */
  readonly filtersPerPacketMax: number;
  /**
   * MQTT 5 topic aliases one client may set up towards the broker (CONNACK's
   * Topic Alias Maximum): each holds a topic name for the connection's life.
   */
  readonly topicAliasesMax: number;
}

/** The largest remaining length the four-byte variable length encoding can express [MQTT-2.2.3]. */
export const remainingLengthBytesMax = 268_435_455;

export const defaultMqttLimits: MqttLimits = {
  packetBytesMax: 1024 * 1024,
  keepAliveGraceFactor: 1.5,
  writeBufferHighWaterBytes: 1024 * 1024,
  inboundAcksPendingMax: 1024,
  packetsPerTurnMax: 64,
  connectTimeoutMs: 10_000,
  connectionsMax: 10_000,
  filtersPerPacketMax: 128,
  topicAliasesMax: 64,
};

export function resolveMqttLimits(overrides: Partial<MqttLimits> = {}): MqttLimits {
  const limits: MqttLimits = { ...defaultMqttLimits, ...overrides };
  checkMqttLimits(limits);
  return limits;
}

export function checkMqttLimits(limits: MqttLimits): void {
  // The smallest useful packet is a CONNECT with a short client id; anything
  // below a few hundred bytes would refuse ordinary clients.
  check(Number.isInteger(limits.packetBytesMax) && limits.packetBytesMax >= 256, 'packetBytesMax must be an integer >= 256');
  check(limits.packetBytesMax <= remainingLengthBytesMax + 5, `packetBytesMax must not exceed ${remainingLengthBytesMax + 5} (the MQTT maximum)`);
  check(Number.isFinite(limits.keepAliveGraceFactor) && limits.keepAliveGraceFactor >= 1, 'keepAliveGraceFactor must be >= 1');
  check(Number.isInteger(limits.writeBufferHighWaterBytes) && limits.writeBufferHighWaterBytes >= 1024, 'writeBufferHighWaterBytes must be an integer >= 1024');
  check(Number.isInteger(limits.inboundAcksPendingMax) && limits.inboundAcksPendingMax >= 2, 'inboundAcksPendingMax must be an integer >= 2');
  check(Number.isInteger(limits.packetsPerTurnMax) && limits.packetsPerTurnMax >= 1, 'packetsPerTurnMax must be a positive integer');
  check(Number.isInteger(limits.connectTimeoutMs) && limits.connectTimeoutMs >= 1, 'connectTimeoutMs must be a positive integer');
  check(Number.isInteger(limits.connectionsMax) && limits.connectionsMax >= 1, 'connectionsMax must be a positive integer');
  check(Number.isInteger(limits.filtersPerPacketMax) && limits.filtersPerPacketMax >= 1, 'filtersPerPacketMax must be a positive integer');
  // 0 announces that no alias may be used; the field is two bytes [MQTT-3.2.2.3.8].
  check(Number.isInteger(limits.topicAliasesMax) && limits.topicAliasesMax >= 0 && limits.topicAliasesMax <= 0xffff, 'topicAliasesMax must be an integer in 0..65535');
  // CONNACK's Receive Maximum announces this bound to MQTT 5 clients; the field is two bytes.
  check(limits.inboundAcksPendingMax <= 0xffff, 'inboundAcksPendingMax must not exceed 65535');
}
