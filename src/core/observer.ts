/**
 * What the core reports as it works, for metrics. The default does nothing,
 * so an embedded broker or a test pays one empty call.
 */
export type ObservedProtocol = 'mqtt' | 'amqp';

export interface BrokerObserver {
  /** A message accepted from a publisher. */
  messageIn(protocol: ObservedProtocol): void;
  /** A message handed to a subscriber or consumer. */
  messageOut(protocol: ObservedProtocol): void;
  /** Messages dropped at a session's or queue's bound. */
  drop(destination: 'session' | 'queue', count: number): void;
  /** A snapshot was written, in this many seconds (encoding to renamed file). */
  snapshotWritten?(seconds: number): void;
}

export const silentObserver: BrokerObserver = {
  messageIn: () => undefined,
  messageOut: () => undefined,
  drop: () => undefined,
};
