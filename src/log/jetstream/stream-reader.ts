/**
 * Reads a JetStream log's stream into HeldFrames with an ordered consumer:
 * from the first sequence the stream holds up to its last one at start-up
 * (load), and, for a standby, on and on (tail) as the writer appends.
 *
 * Every message is checked at the boundary as a segment's frame is: its
 * checksum, length and LSN (= its stream sequence) must match, or the read
 * fails naming the sequence. Fence messages (empty, see jetstream-log.ts) hold
 * an empty slot.
 */
import type { JetStreamClient, JsMsg, ConsumerMessages } from '@nats-io/jetstream';
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
  private messages: ConsumerMessages | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly js: JetStreamClient,
    private readonly stream: string,
    private readonly frames: HeldFrames,
  ) {}

  /**
   * Reads from frames.nextLsn on; resolves once `lastLsn` is held. With `tail`, goes on reading after that and
   * tells `onRecord` of each record (until stop()); `onError` hears of a read that failed for good.
   */
  async readUntil(lastLsn: Lsn, tail?: { onRecord(record: LogRecord): void; onError(error: unknown): void }): Promise<void> {
    if (lastLsn < this.frames.nextLsn && tail === undefined) return;
    const consumer = await this.js.consumers.get(this.stream, { opt_start_seq: this.frames.nextLsn });
    const messages = await consumer.consume({ max_messages: 1024 });
    this.messages = messages;
    let caughtUp!: () => void;
    let failed!: (error: unknown) => void;
    const reached = new Promise<void>((resolve, reject) => {
      caughtUp = resolve;
      failed = reject;
    });
    if (lastLsn < this.frames.nextLsn) caughtUp();
    this.running = (async () => {
      try {
        for await (const message of messages) {
          // A purge by the writer (retention) may skip the ordered consumer past LSNs we never held.
          if (message.seq > this.frames.nextLsn) this.frames.skipTo(message.seq);
          if (message.seq < this.frames.nextLsn) continue;
          const frame = frameOfMessage(this.stream, message);
          this.frames.push(message.seq, frame);
          if (frame !== undefined && tail !== undefined && message.seq > lastLsn) tail.onRecord(decodeHeldFrame(frame));
          if (message.seq >= lastLsn) {
            caughtUp();
            if (tail === undefined) break;
          }
        }
      } catch (error) {
        failed(error);
        tail?.onError(error);
      } finally {
        messages.stop();
      }
    })();
    await reached;
  }

  async stop(): Promise<void> {
    this.messages?.stop();
    await this.running;
  }
}
