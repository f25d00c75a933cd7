/**
 * What Cairn tells a client about itself in connection.start: the
 * server-properties table (product, version, capabilities) and the SASL
 * mechanisms it accepts.
 *
 * Capabilities are promises clients act on: publisher_confirms and
 * basic.nack make them wait for confirms, consumer_cancel_notify lets them
 * expect basic.cancel when a queue is deleted under a consumer,
 * authentication_failure_close lets them read a 403 instead of a dropped
 * socket. What Cairn does not do is said with `false`, never left ambiguous.
 */
import { version } from '../../version.js';
import { toFieldTable, type FieldTable } from './codec/index.js';

export const saslMechanisms = ['PLAIN', 'AMQPLAIN'] as const;
export type SaslMechanism = (typeof saslMechanisms)[number];

export const serverCapabilities = {
  publisher_confirms: true,
  'basic.nack': true,
  consumer_cancel_notify: true,
  exchange_exchange_bindings: true,
  'connection.blocked': true,
  authentication_failure_close: true,
  per_consumer_qos: true,
  consumer_priorities: true,
  direct_reply_to: true,
} as const;

export function serverProperties(): FieldTable {
  return toFieldTable({
    product: 'Cairn',
    version,
    platform: `Node.js ${process.version}`,
    copyright: 'Cairn contributors, Apache-2.0',
    information: 'A message broker whose only source of truth is one append-only log',
    capabilities: { ...serverCapabilities },
  });
}
