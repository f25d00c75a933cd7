/**
 * Reads a JetStream log's stream into HeldFrames with an ordered consumer,
 * from the first sequence the stream holds up to its last one at start-up.
 *
 * Every message is checked at the boundary as a segment's frame is: its
 * checksum, length and LSN (= its stream sequence) must match, or the read
 * fails naming the sequence. Fence messages (empty, see jetstream-log.ts) hold
 * an empty slot.
 */
import type { JetStreamClient, JsMsg } from '@nats-io/jetstream';
import { CorruptRecordError } from '../errors.js';
import { decodeFrame, frameBytesMin, frameProblem, type LogRecord, type Lsn } from '../record.js';
import type { HeldFrames } from './held-frames.js';

/** What one stream message holds: a verified record frame, or nothing (a fence: an empty message). */
export function frameOfMessage(stream: string, message: Pick<JsMsg, 'seq' | 'data'>): Buffer | undefined {
  if (message.data.length === 0) return undefined;
  // A copy: the message's bytes are a view of the client's read buffer.
  const frame = Buffer.from(message.data);
  const problem = frame.length < frameBytesMin ? `${frame.length} bytes is shorter than any frame` : frameProblem(frame, viewOf(frame), 0, frame.length, message.seq);
  if (problem !== undefined) throw new CorruptRecordError(`stream ${stream}`, message.seq, 0, problem);
  return frame;
}

export function viewOf(frame: Buffer): DataView {
  return new DataView(frame.buffer, frame.byteOffset, frame.length);
}

export function decodeHeldFrame(frame: Buffer): LogRecord {
  return decodeFrame(new Uint8Array(frame.buffer, frame.byteOffset, frame.length), viewOf(frame), 0, frame.length);
}

export class StreamReader {
  constructor(
    private readonly js: JetStreamClient,
    private readonly stream: string,
    private readonly frames: HeldFrames,
  ) {}

  /** Reads from frames.nextLsn on with an ordered consumer; resolves once `lastLsn` is held. */
  async readUntil(lastLsn: Lsn): Promise<void> {
    if (lastLsn < this.frames.nextLsn) return;
    const consumer = await this.js.consumers.get(this.stream, { opt_start_seq: this.frames.nextLsn });
    const messages = await consumer.consume({ max_messages: 1024 });
    try {
      for await (const message of messages) {
        // Retention (a purge) may have removed LSNs below the first message the consumer finds.
        if (message.seq > this.frames.nextLsn) this.frames.skipTo(message.seq);
        if (message.seq < this.frames.nextLsn) continue;
        this.frames.push(message.seq, frameOfMessage(this.stream, message));
        if (message.seq >= lastLsn) break;
      }
    } finally {
      messages.stop();
    }
  }
}
