/**
 * Reads a JetStream log's stream into HeldFrames with an ordered consumer,
 * from the next message the frames do not hold up to the stream's last one
 * at start-up. Every message is checked as stream-message.ts says (its frames'
 * checksums, lengths and LSNs, which must follow the held ones), or the read
 * fails naming the sequence.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import type { Lsn } from '../record.js';
import { HeldFrames } from './held-frames.js';
import { decodeStreamMessage, type MessageFrames, type ReadMessage } from './stream-message.js';

/** What a stream's state says about where reading it starts. */
export interface StreamState {
  readonly messages: number;
  readonly first_seq: number;
  readonly last_seq: number;
}

/**
 * Empty frames for reading `state`'s stream from its first message. An empty stream reports first_seq 0 (fresh)
 * or last_seq + 1 (all purged): either way nothing is read before last_seq + 1, and the next LSN is known only
 * there (a fresh stream: 1; a stream someone emptied: after `lsnFloor`, the newest LSN known elsewhere, e.g. the
 * snapshot's). A stream holding messages says its first LSN with its first message.
 */
export function framesForStream(state: StreamState, lsnFloor: Lsn = 0): HeldFrames {
  if (state.messages === 0) return new HeldFrames(state.last_seq + 1, Math.max(state.last_seq, lsnFloor) + 1);
  return new HeldFrames(Math.max(1, state.first_seq), undefined);
}

/**
 * Holds `message` if it is the next one: true. A message before frames.nextSequence is already held: false.
 * A later one means a purge removed what lay between: `purged` decides (with the message's frames) whether
 * to skip to it (true) or not hold it (false).
 */
export function holdMessage(stream: string, frames: HeldFrames, message: ReadMessage, purged: (contents: MessageFrames) => boolean = () => true): boolean {
  if (message.seq < frames.nextSequence) return false;
  const skipped = message.seq > frames.nextSequence;
  const contents = decodeStreamMessage(stream, message, skipped ? undefined : frames.expectedLsn);
  if (skipped) {
    if (!purged(contents)) return false;
    frames.skipTo(message.seq, contents.firstLsn);
  }
  frames.holdMessage(message.seq, contents.firstLsn, contents.frames);
  return true;
}

export class StreamReader {
  constructor(
    private readonly js: JetStreamClient,
    private readonly stream: string,
    private readonly frames: HeldFrames,
  ) {}

  /** Reads from frames.nextSequence on with an ordered consumer; resolves once the message at `lastSequence` is held. */
  async readUntil(lastSequence: number): Promise<void> {
    if (lastSequence < this.frames.nextSequence) return;
    const consumer = await this.js.consumers.get(this.stream, { opt_start_seq: this.frames.nextSequence });
    const messages = await consumer.consume({ max_messages: 1024 });
    try {
      for await (const message of messages) {
        // Retention (a purge) may have removed messages below the first one the consumer finds.
        holdMessage(this.stream, this.frames, message);
        if (message.seq >= lastSequence) break;
      }
    } finally {
      messages.stop();
    }
  }
}
