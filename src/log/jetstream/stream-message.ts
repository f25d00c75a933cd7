/**
 * One message of a JetStream log's stream (jetstream-log.ts): what it holds
 * and how a reader checks it. A message holds one or more consecutive LSNs:
 *
 *   a batch  the frames (record.ts) of consecutive LSNs, back to back, as
 *            a run of frames in a segment; each frame carries its own
 *            length, LSN and checksum:
 *
 *            +-----------+-------------+-----+-----------+
 *            | frame lsn | frame lsn+1 | ... | frame lsn+k |
 *            +-----------+-------------+-----+-----------+
 *
 *            A stream written before batching holds one frame per message
 *            (its LSN = the message's sequence): batches of one.
 *   a fence  an empty payload (a writer's takeover): one LSN without a
 *            record, the one its header Cairn-Fence-Lsn names. A fence
 *            without the header (written before batching, when LSN was the
 *            sequence) takes the LSN after the message before it, or its
 *            sequence when it is the first message read.
 *
 * Every frame is checked at the boundary as a segment's is: checksum,
 * length, and an LSN that follows the one before it (and, when the reader
 * knows which LSN comes next, that one). A bad message fails the read
 * naming its sequence.
 */
import { headers, type MsgHdrs } from '@nats-io/transport-node';
import type { JsMsg } from '@nats-io/jetstream';
import { CorruptRecordError } from '../errors.js';
import { decodeFrame, frameLengthIn, frameLsnIn, frameProblem, isPlausibleFrameLength, type LogRecord, type Lsn } from '../record.js';

export const fenceLsnHeader = 'Cairn-Fence-Lsn';

/** What one message holds: the frames of its LSNs from firstLsn on (undefined: a fence's LSN). */
export interface MessageFrames {
  readonly firstLsn: Lsn;
  readonly frames: ReadonlyArray<Buffer | undefined>;
}

export type ReadMessage = Pick<JsMsg, 'seq' | 'data' | 'headers'>;

/** The headers of a fence message taking `lsn`. */
export function fenceHeaders(lsn: Lsn): MsgHdrs {
  const fence = headers();
  fence.set(fenceLsnHeader, String(lsn));
  return fence;
}

/**
 * The frames of `message`, checked. `expectedLsn` is the LSN the message must start at, when the reader knows
 * it (undefined: the first message read after the stream's purged front, which says where it starts).
 */
export function decodeStreamMessage(stream: string, message: ReadMessage, expectedLsn: Lsn | undefined): MessageFrames {
  const where = `stream ${stream}`;
  if (message.data.length === 0) return { firstLsn: fenceLsn(where, message, expectedLsn), frames: [undefined] };
  // A copy: the message's bytes are a view of the client's read buffer. The frames are views of the copy.
  const payload = Buffer.from(message.data);
  const view = viewOf(payload);
  const frames: Buffer[] = [];
  let offset = 0;
  let lsn = expectedLsn;
  while (offset < payload.length) {
    const length = payload.length - offset < 12 ? 0 : frameLengthIn(view, offset);
    if (!isPlausibleFrameLength(length) || offset + length > payload.length) {
      throw new CorruptRecordError(where, lsn ?? message.seq, offset, `message ${message.seq}: no whole frame at byte ${offset} of ${payload.length} (length field ${length})`);
    }
    lsn ??= frameLsnIn(view, offset);
    const problem = frameProblem(payload, view, offset, length, lsn);
    if (problem !== undefined) throw new CorruptRecordError(where, lsn, offset, `message ${message.seq}: ${problem}`);
    frames.push(payload.subarray(offset, offset + length));
    offset += length;
    lsn += 1;
  }
  return { firstLsn: lsn! - frames.length, frames };
}

function fenceLsn(where: string, message: ReadMessage, expectedLsn: Lsn | undefined): Lsn {
  const named = message.headers?.get(fenceLsnHeader);
  if (named === undefined || named === '') return expectedLsn ?? message.seq;
  const lsn = Number(named);
  if (!Number.isSafeInteger(lsn) || lsn < 1 || (expectedLsn !== undefined && lsn !== expectedLsn)) {
    throw new CorruptRecordError(where, expectedLsn ?? message.seq, 0, `message ${message.seq}: a fence naming LSN '${named}' where ${expectedLsn ?? 'a positive LSN'} was expected`);
  }
  return lsn;
}

export function viewOf(frame: Buffer): DataView {
  return new DataView(frame.buffer, frame.byteOffset, frame.length);
}

export function decodeHeldFrame(frame: Buffer): LogRecord {
  return decodeFrame(new Uint8Array(frame.buffer, frame.byteOffset, frame.length), viewOf(frame), 0, frame.length);
}
