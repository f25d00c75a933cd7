/**
 * Protocol header negotiation (spec 4.2.2). A client opens with the 8 bytes
 * 'AMQP' 0 0 9 1. "If the server does not recognise the first 5 octets of
 * data on the socket, or does not support the specific protocol version that
 * the client requests, it MUST write a valid protocol header to the socket,
 * then flush the socket ... and then close the socket connection."
 *
 * Cairn speaks only 0-9-1, so any difference is a rejection, and it is
 * decided at the first differing byte: an HTTP or MQTT client gets its answer
 * without having to send 8 bytes first.
 */
import { NEED_MORE, type NeedMore } from './frame.js';
import { PROTOCOL_HEADER } from './spec.js';

export type ProtocolHeaderCheck =
  | { readonly accepted: true; readonly bytesConsumed: number }
  | { readonly accepted: false; readonly reply: Buffer };

/**
 * Judges the bytes a client sent first. Accepted: the 8 header bytes are
 * consumed and frames follow. Rejected: write `reply` (the header Cairn
 * supports), flush, and close.
 */
export function checkProtocolHeader(bytes: Buffer, offset = 0): ProtocolHeaderCheck | NeedMore {
  const available = Math.min(bytes.length - offset, PROTOCOL_HEADER.length);
  for (let index = 0; index < available; index++) {
    if (bytes[offset + index] !== PROTOCOL_HEADER[index]) {
      return { accepted: false, reply: Buffer.from(PROTOCOL_HEADER) };
    }
  }
  if (available < PROTOCOL_HEADER.length) return NEED_MORE;
  return { accepted: true, bytesConsumed: PROTOCOL_HEADER.length };
}
