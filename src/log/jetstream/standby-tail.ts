/**
 * A warm standby (issue 17): while another node writes the log, a standby
 * reads the stream as it grows and keeps its projection up to date, so that
 * taking over costs the lease's expiry and the few records since the last
 * read, not a read and a replay of everything since the snapshot.
 *
 * It holds what a writer would hold after reading the stream (HeldFrames from
 * the stream's first sequence: queued messages are read back from there) and
 * the state: the bucket's snapshot with every later record fed to the same
 * GroupedReplay start-up uses (a transaction's records are applied at its
 * commit), so the state it hands over, with the group still open if the
 * writer died inside one, is the replayed state.
 *
 * Retention on the writer purges the front of the stream: every few seconds
 * the tail forgets the messages below the stream's first sequence. If the read
 * fell so far behind that messages it had not read were purged (the next
 * message read comes after a gap in sequences) and they held records past the
 * snapshot the state started from, those records are below the writer's
 * newest snapshot: the tail starts over from that snapshot.
 */
import { decode } from '@msgpack/msgpack';
import { jetstream, type ConsumerMessages, type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../../logger.js';
import { decodeState, type EncodedState } from '../../projections/snapshot-codec.js';
import { GroupedReplay } from '../../projections/transaction-groups.js';
import { initialState, type BrokerState } from '../../projections/state.js';
import type { HeldFrames } from './held-frames.js';
import { SnapshotBucket, type StoredSnapshot } from './snapshot-bucket.js';
import { decodeHeldFrame, type MessageFrames } from './stream-message.js';
import { framesForStream, holdMessage } from './stream-reader.js';

const trimEveryMs = 5_000;

export interface WarmLog {
  readonly frames: HeldFrames;
  /** The bucket's snapshot the state was built on (undefined: none, the state was built from the stream's start). */
  readonly snapshot: StoredSnapshot | undefined;
  readonly state: BrokerState;
  /** The replay the state was built by: start-up feeds it the records from `nextLsn` on. */
  readonly replay: GroupedReplay;
  /** The first LSN the tail has not read. */
  readonly nextLsn: number;
  /** Records fed to the replay while waiting. */
  readonly applied: number;
}

export class StandbyTail {
  private frames: HeldFrames | undefined;
  private snapshot: StoredSnapshot | undefined;
  private state: BrokerState = initialState();
  private replay = new GroupedReplay(this.state);
  private applied = 0;
  private messages: ConsumerMessages | undefined;
  private stopped = false;
  private readonly done: Promise<void>;
  private failure: unknown;

  private constructor(private readonly connection: NatsConnection, private readonly stream: string, private readonly logger: Logger) {
    this.done = this.run().catch((error: unknown) => {
      // A tail that failed leaves a cold start: the writer's own read and replay, as without a tail.
      this.failure = error;
      this.logger.warn({ err: error, stream }, 'standby: stopped following the stream; taking over will read and replay it');
    });
  }

  static start(connection: NatsConnection, stream: string, logger: Logger): StandbyTail {
    return new StandbyTail(connection, stream, logger);
  }

  /** The last LSN read and fed to the replay (0 before the first read). */
  get readUpTo(): number {
    return this.frames === undefined ? 0 : this.frames.nextLsn - 1;
  }

  /** Stops following; what it built, or undefined when it failed (or had nothing yet). */
  async stop(): Promise<WarmLog | undefined> {
    this.stopped = true;
    this.messages?.stop();
    await this.done;
    if (this.failure !== undefined || this.frames === undefined) return undefined;
    return { frames: this.frames, snapshot: this.snapshot, state: this.state, replay: this.replay, nextLsn: this.frames.nextLsn, applied: this.applied };
  }

  /** Records up to here are in the snapshot the state started from. */
  private get snapshotLsn(): number {
    return this.snapshot?.lsn ?? 0;
  }

  private async run(): Promise<void> {
    const manager = await jetstreamManager(this.connection);
    // The writer creates the stream right after taking the lease: a standby may look before it exists.
    while (!this.stopped && !(await manager.streams.info(this.stream).then(() => true, () => false))) await new Promise((resolve) => setTimeout(resolve, 500));
    const bucket = await SnapshotBucket.open(this.connection, this.stream, 1);
    while (!this.stopped) {
      const startOver = await this.follow(manager, bucket);
      if (!startOver) return;
    }
  }

  /** Loads the snapshot, then applies the stream from there on until stopped; true when it must start over. */
  private async follow(manager: JetStreamManager, bucket: SnapshotBucket): Promise<boolean> {
    const info = await manager.streams.info(this.stream);
    this.snapshot = await bucket.load();
    this.state = this.snapshot === undefined ? initialState() : decodeState(decode(this.snapshot.data) as EncodedState);
    this.replay = new GroupedReplay(this.state);
    const frames = framesForStream(info.state, this.snapshotLsn);
    this.frames = frames;
    this.applied = 0;
    if (this.stopped) return false;
    const consumer = await jetstream(this.connection).consumers.get(this.stream, { opt_start_seq: frames.nextSequence });
    this.messages = await consumer.consume({ max_messages: 1024 });
    // stop() may have come while the consumer was being made: it found nothing to stop then.
    if (this.stopped) {
      this.messages.stop();
      return false;
    }
    let trimmedAt = performance.now();
    let startOver = false;
    // Purged before it was read: if the state still needed any of those records, start over from the newest snapshot.
    const skipPurged = (next: MessageFrames): boolean => {
      if (next.firstLsn - 1 <= this.snapshotLsn) return true;
      this.logger.info({ stream: this.stream, from: frames.nextLsn, to: next.firstLsn - 1 }, 'standby: records purged before they were read; starting over from the newest snapshot');
      startOver = true;
      return false;
    };
    for await (const message of this.messages) {
      if (this.stopped) break;
      const lsn = frames.nextLsn;
      if (!holdMessage(this.stream, frames, message, skipPurged)) {
        if (!startOver) continue;
        this.messages.stop();
        return true;
      }
      for (let held = Math.max(lsn, frames.firstLsn, this.snapshotLsn + 1); held < frames.nextLsn; held++) {
        const frame = frames.get(held);
        if (frame === undefined) continue;
        this.replay.feed(decodeHeldFrame(frame));
        this.applied++;
      }
      if (performance.now() - trimmedAt > trimEveryMs) {
        trimmedAt = performance.now();
        const now = await manager.streams.info(this.stream);
        frames.dropBelowSequence(now.state.first_seq);
      }
    }
    return false;
  }
}
