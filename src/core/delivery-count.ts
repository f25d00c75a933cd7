/**
 * The x-delivery-count header of a redelivered message, as RabbitMQ's quorum
 * queues set it: the number of earlier deliveries, a long, added to the
 * message's headers (replacing a previous value) when it is delivered again.
 * The stored message is never changed: the header is written into the copy
 * of the properties that goes out with this delivery.
 */
import { decodeProperties, encodeProperties } from '../protocols/amqp/codec/index.js';
import type { AmqpMessage } from './api.js';

export const deliveryCountHeader = 'x-delivery-count';

/** `message` as delivered after `deliveries` earlier deliveries (unchanged for a first delivery). */
export function withDeliveryCount(message: AmqpMessage, deliveries: number): AmqpMessage {
  if (deliveries === 0) return message;
  const raw = message.properties;
  const properties = decodeProperties(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength));
  const headers = { ...(properties.headers ?? {}), [deliveryCountHeader]: { type: 'l' as const, value: BigInt(deliveries) } };
  return { ...message, properties: encodeProperties({ ...properties, headers }) };
}
