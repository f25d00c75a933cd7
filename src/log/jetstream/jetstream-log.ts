/**
 * JetStreamLog: the broker's log (core/broker.ts BrokerLog) replicated by a
 * NATS JetStream stream (issue 17). Records are published in batches: one
 * stream message holds the frames (record.ts, encoded as in a segment) of the
 * records appended together (stream-message.ts gives the layout). Each opening
 * of the log for writing is a writer with an id of its own.
 *
 * LSNs and stream sequences are two counters: every frame carries its LSN,
 * and held-frames.ts maps messages to the LSNs they hold (retention purges
 * whole messages by sequence; readers continue by sequence). LSNs start at 1
 * on a fresh stream, as on the file log; each takeover by a new writer (open
 * with `fence`) publishes one fence message (empty, its LSN in a header),
 * which takes an LSN and holds no record, so LSNs skip one there. Nothing in
 * the broker needs LSNs without gaps; a read of a fence's LSN is refused like
 * any LSN without a record. A stream written before batching (one frame per
 * message, LSN = sequence) reads as batches of one.
 *
 * Batching, as the file log's group commit (group-commit.ts): append takes
 * LSNs synchronously, in call order, and holds the frames; at the end of the
 * tick (setImmediate: after the I/O callbacks of this turn of the event
 * loop), the records not yet published are cut into messages of at most
 * messageBytesMax, while fewer than publishesInFlightMax messages await their
 * ack. Records appended while the messages in flight are unacknowledged wait
 * for the next cut, so the batch grows with the load and the window is the
 * time JetStream takes to acknowledge. A record larger than the cap goes alone.
 *
 * Durability: an append's promise resolves when JetStream has acknowledged
 * the message holding its last record, i.e. when a quorum of the stream's
 * replicas stored it (R3: two of three). A PUBACK or a confirm therefore waits
 * for JetStream's ack, as on the file log it waits for the fdatasync.
 *
 * Fencing: each message carries a message id, `<writer id>:<its first LSN>`,
 * and every message but a writer's first expects both the sequence before it
 * (`Nats-Expected-Last-Sequence`) and the id of this writer's previous message
 * there (`Nats-Expected-Last-Msg-Id`): the stream takes it only if the message
 * just before it is this writer's own. The sequence alone is not enough with
 * pipelined publishes: a deposed writer's publish still in flight could land
 * right after the new writer's messages whenever their count fits (the fencing
 * test caught it). A writer's first message expects the sequence it read up
 * to. So a foreign message ends a writer's run for good: two writers never
 * interleave. (The per-subject expectation would say the same, but JetStream
 * does not take it pipelined.) The ids also feed the stream's duplicate
 * window, kept short (duplicateWindowMs) to bound the servers' memory. One
 * price: a stream leader that restarted and has seen no message since forgets
 * the last id once it is older than that window, and refuses the writer's
 * next append: the writer fails and a standby (or the restart) takes over with
 * a fence; nothing is lost.
 * A publish refused because another message took its place fails the log
 * for good (as a failed fdatasync does the file log: errors.ts
 * LogFailedError): appends are refused, nothing more is acknowledged,
 * `onFailed` is told; the broker stops and a restart reloads the stream. A
 * publish not acknowledged in time (the server this client talked to died,
 * the stream is electing a leader) is resent with every message after it,
 * the same messages with the same ids (a message's contents are fixed when it
 * is cut), until publishTimeoutMs passes without an ack; then the log fails
 * too.
 *
 * Reads are served from memory (held-frames.ts): the stream is read in full
 * at open, from its first message, and every appended frame is kept until
 * retention purges the message holding it.
 */
import { randomBytes } from 'node:crypto';
import { jetstream, JetStreamApiCodes, JetStreamApiError, jetstreamManager, StorageType, type JetStreamClient, type JetStreamManager, type JetStreamPublishOptions, type PubAck } from '@nats-io/jetstream';
import type { MsgHdrs } from '@nats-io/transport-node';
import { assert } from '../../assert.js';
import { silentLogger, type Logger } from '../../logger.js';
import { LogClosedError, LogError, LogFailedError, NoSuchRecordError } from '../errors.js';
import { checkAppendRecord, encodeFrame, type AppendRecord, type LogRecord, type Lsn } from '../record.js';
import type { RetentionPin } from '../log.js';
import type { HeldFrames } from './held-frames.js';
import type { JetStreamAddress } from './jetstream-address.js';
import { connectToNats, nanos, type NatsConnection } from './nats-connection.js';
import { SnapshotBucket, type StoredSnapshot } from './snapshot-bucket.js';
import { decodeHeldFrame, fenceHeaders } from './stream-message.js';
import { framesForStream, StreamReader } from './stream-reader.js';

export interface JetStreamLogOptions {
  readonly address: JetStreamAddress;
  readonly credsFile?: string | undefined;
  /** Replicas of a stream this log creates (an existing stream keeps its own). Default 3. */
  readonly replicas?: number;
  /** How long a record may go unacknowledged, resends included, before the log fails. Default 10 s (a stream leader election takes a few); at most duplicateWindowMs. */
  readonly publishTimeoutMs?: number;
  /** Publish a fence message first: every writer that read the stream before it can append no more. A writer taking over sets it. */
  readonly fence?: boolean;
  readonly logger?: Logger;
  /** Told once, when the log failed and refuses appends for good. */
  readonly onFailed?: (error: LogFailedError) => void;
  /** A connection to use (not closed by close()); otherwise the log opens its own. */
  readonly connection?: NatsConnection;
  /** The frames a warm standby already read (standby-tail.ts): the read continues after them. */
  readonly heldFrames?: HeldFrames;
  /** The LSN of the first record when the stream is empty (a recovered log keeps its source's LSNs); default 1. */
  readonly firstLsn?: Lsn;
}

export const publishTimeoutMsDefault = 10_000;
/**
 * The stream's duplicate window: every message id is remembered this long by each server (memory), see Fencing.
 * It must outlast a message's resends (publishTimeoutMs), so that a resent message the stream holds is a duplicate.
 */
export const duplicateWindowMs = 30_000;
/** One publish attempt waits this long for its ack before the unacknowledged messages are resent. */
const publishAttemptMs = 2_000;
const resendPauseMs = 100;
/**
 * Messages published and not yet acknowledged, at most: records appended meanwhile wait for the next cut. Two
 * keeps one message on its way while the previous one is acknowledged (the file log's write-while-sync), and
 * makes each message carry what arrived in half an acknowledgement's time.
 */
export const publishesInFlightMax = 2;
/** A message's payload, at most (one larger record goes alone), well below nats-server's max_payload (default 1 MiB). */
export const messageBytesMax = 512 * 1024;
/** Room left in a message for the headers JetStream's expectations add (max_payload counts headers and payload). */
const headerBytesReserve = 4096;

interface DurableWaiter {
  readonly lsn: Lsn;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/** A stream message of this writer: the records of LSNs firstLsn..lastLsn, or a fence (an empty payload, one LSN). Fixed once cut: a resend sends the same. */
interface OutgoingMessage {
  readonly sequence: number;
  readonly firstLsn: Lsn;
  readonly lastLsn: Lsn;
  readonly payload: Uint8Array;
  readonly options: Partial<JetStreamPublishOptions>;
}

export class JetStreamLog {
  private durable: Lsn;
  private readonly waiters: DurableWaiter[] = [];
  private failure: LogFailedError | undefined = undefined;
  private closing: Promise<void> | undefined = undefined;
  private newestSnapshot: StoredSnapshot | undefined;
  private readonly subject: string;
  /** A fresh id at each open: the prefix of this writer's message ids. */
  private readonly writerId = randomBytes(6).toString('hex');
  /** The id of this writer's last message cut (undefined before its first): the next one expects it before itself. */
  private lastOwnMessageId: string | undefined = undefined;
  /** The first LSN appended and not yet in a message. */
  private uncutFrom: Lsn;
  /** Published and not yet acknowledged, in sequence order. */
  private readonly unacknowledged: OutgoingMessage[] = [];
  private cutScheduled = false;
  /** True between a failed publish and the resend of the unacknowledged messages: nothing new is published before them. */
  private resending = false;
  /** Bumped when the unacknowledged messages are resent: a failed attempt of an earlier round is covered by it. */
  private resendRound = 0;
  /** When publishes began failing with no ack since (undefined: no outage). */
  private outageSince: number | undefined = undefined;
  private readonly payloadBytesMax: number;

  private constructor(
    readonly stream: string,
    private readonly connection: NatsConnection,
    private readonly ownsConnection: boolean,
    private readonly js: JetStreamClient,
    private readonly manager: JetStreamManager,
    private readonly frames: HeldFrames,
    private readonly snapshots: SnapshotBucket,
    snapshot: StoredSnapshot | undefined,
    private readonly settings: { readonly publishTimeoutMs: number; readonly logger: Logger; readonly onFailed: ((error: LogFailedError) => void) | undefined },
  ) {
    this.durable = frames.nextLsn - 1;
    this.uncutFrom = frames.nextLsn;
    this.newestSnapshot = snapshot;
    this.subject = `${stream}.log`;
    this.payloadBytesMax = Math.min(messageBytesMax, (connection.info?.max_payload ?? messageBytesMax + headerBytesReserve) - headerBytesReserve);
  }

  static async open(options: JetStreamLogOptions): Promise<JetStreamLog> {
    const { address } = options;
    const logger = options.logger ?? silentLogger();
    const connection = options.connection ?? (await connectToNats(address, { credsFile: options.credsFile }));
    try {
      const manager = await jetstreamManager(connection);
      const js = jetstream(connection);
      const replicas = options.replicas ?? 3;
      const state = await ensureStream(manager, address.stream, replicas);
      const snapshots = await SnapshotBucket.open(connection, address.stream, replicas);
      const snapshot = await snapshots.load();
      const frames = options.heldFrames ?? framesForStream(state, Math.max(snapshot?.lsn ?? 0, (options.firstLsn ?? 1) - 1));
      await new StreamReader(js, address.stream, frames).readUntil(state.last_seq);
      const publishTimeoutMs = Math.min(options.publishTimeoutMs ?? publishTimeoutMsDefault, duplicateWindowMs);
      const settings = { publishTimeoutMs, logger, onFailed: options.onFailed };
      const log = new JetStreamLog(address.stream, connection, options.connection === undefined, js, manager, frames, snapshots, snapshot, settings);
      if (options.fence === true) await log.publishFence();
      logger.info({ stream: address.stream, firstLsn: frames.firstLsn, nextLsn: frames.nextLsn, nextSequence: frames.nextSequence, snapshotLsn: snapshot?.lsn, fenced: options.fence === true }, 'opened the JetStream log');
      return log;
    } catch (error) {
      if (options.connection === undefined) await connection.close();
      throw error;
    }
  }

  get nextLsn(): Lsn {
    return this.frames.nextLsn;
  }

  /** The oldest LSN still held (after retention); equals nextLsn when the stream holds nothing. */
  get firstLsn(): Lsn {
    return this.frames.firstLsn;
  }

  /** The highest LSN JetStream has acknowledged (0 if none). */
  get durableLsn(): Lsn {
    return this.durable;
  }

  get failed(): LogFailedError | undefined {
    return this.failure;
  }

  /** LSNs are assigned synchronously in call order; resolves once JetStream acknowledged the last of them. `lazy` changes nothing here. */
  append(records: readonly AppendRecord[], _options: { lazy?: boolean } = {}): Promise<Lsn[]> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.closing !== undefined) return Promise.reject(new LogClosedError());
    for (const record of records) checkAppendRecord(record);
    const lsns = new Array<Lsn>(records.length);
    for (let i = 0; i < records.length; i++) {
      const lsn = this.frames.nextLsn;
      this.frames.push(lsn, encodeFrame(lsn, records[i]!));
      lsns[i] = lsn;
    }
    if (records.length === 0) return Promise.resolve(lsns);
    this.scheduleCut();
    return this.waitDurable(lsns[lsns.length - 1]!).then(() => lsns);
  }

  /** Resolves when everything appended so far is acknowledged. */
  sync(): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return this.waitDurable(this.frames.nextLsn - 1);
  }

  *read(from: { lsn?: Lsn } = {}): IterableIterator<LogRecord> {
    const end = this.frames.nextLsn;
    for (let lsn = Math.max(from.lsn ?? 1, this.frames.firstLsn); lsn < end; lsn++) {
      const frame = this.frames.get(lsn);
      if (frame !== undefined) yield decodeHeldFrame(frame);
    }
  }

  /** Any LSN from firstLsn to nextLsn - 1 that holds a record, acknowledged or not; otherwise NoSuchRecordError. */
  readRecord(lsn: Lsn): LogRecord {
    if (!Number.isSafeInteger(lsn)) throw new LogError('EINVALIDARGUMENT', `an LSN is an integer, got ${String(lsn)}`);
    const { firstLsn, nextLsn } = this.frames;
    if (lsn < firstLsn) throw new NoSuchRecordError(lsn, firstLsn, nextLsn - 1, lsn < 1 ? 'LSNs start at 1' : 'retention has purged it from the stream');
    if (lsn >= nextLsn) throw new NoSuchRecordError(lsn, firstLsn, nextLsn - 1, 'it has not been appended yet');
    const frame = this.frames.get(lsn);
    if (frame === undefined) throw new NoSuchRecordError(lsn, firstLsn, nextLsn - 1, 'it is a writer fence\'s LSN, not a record\'s');
    return decodeHeldFrame(frame);
  }

  loadSnapshot(): StoredSnapshot | undefined {
    return this.newestSnapshot;
  }

  /** Waits until `lsn` is acknowledged, then stores the snapshot in the object store bucket (replacing the previous one). */
  async writeSnapshot(lsn: Lsn, data: Uint8Array): Promise<void> {
    if (!Number.isSafeInteger(lsn) || lsn < 1 || lsn >= this.nextLsn) {
      throw new LogError('EINVALIDARGUMENT', `a snapshot must cover an appended LSN (1..${this.nextLsn - 1}), got ${String(lsn)}`);
    }
    await this.waitDurable(lsn);
    if (this.newestSnapshot !== undefined && this.newestSnapshot.lsn >= lsn) return;
    await this.snapshots.save(lsn, data);
    this.newestSnapshot = { lsn, data };
  }

  /**
   * Purges the stream's messages wholly below the newest snapshot's LSN and below `keepFromLsn` (the oldest
   * message a queue still holds), never one that holds either: the snapshot's own record stays, so the stream
   * never ends up empty.
   */
  async applyRetention(pin: RetentionPin = {}): Promise<{ purged: number }> {
    if (this.failure !== undefined) throw this.failure;
    const snapshotLsn = this.newestSnapshot?.lsn;
    if (snapshotLsn === undefined) return { purged: 0 };
    const below = Math.min(snapshotLsn, pin.keepFromLsn ?? Number.POSITIVE_INFINITY, this.durable);
    const keepFrom = this.frames.sequenceHolding(below);
    if (keepFrom === undefined || keepFrom <= this.frames.firstSequence) return { purged: 0 };
    // `seq` purges every message with a lower sequence, not the one at `seq`.
    const { purged } = await this.manager.streams.purge(this.stream, { seq: keepFrom });
    this.frames.dropBelowSequence(keepFrom);
    this.settings.logger.info({ stream: this.stream, purged, firstLsn: this.frames.firstLsn, firstSequence: keepFrom, snapshotLsn, keepFromLsn: pin.keepFromLsn }, 'retention applied');
    return { purged };
  }

  /** Fails the log for good (a deposed writer; tests): appends are refused, waiters rejected, onFailed told. */
  fail(message: string, cause?: unknown, code?: string): void {
    if (this.failure !== undefined) return;
    const error = new LogFailedError(message, cause, code);
    this.failure = error;
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
    this.settings.logger.error({ err: error, stream: this.stream, durableLsn: this.durable }, 'the JetStream log failed');
    this.settings.onFailed?.(error);
  }

  /** Refuses new appends, waits for those in flight (acknowledged or failed), closes the connection it opened. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.waitDurable(this.frames.nextLsn - 1).catch(() => undefined);
      if (this.ownsConnection) await this.connection.close();
    })();
    return this.closing;
  }

  /** Cuts and publishes the records appended so far at the end of this tick, gathering the tick's appends. */
  private scheduleCut(): void {
    if (this.cutScheduled) return;
    this.cutScheduled = true;
    setImmediate(() => {
      this.cutScheduled = false;
      this.publishUncut();
    });
  }

  /** Cuts the uncut records into messages and publishes them, while fewer than publishesInFlightMax await their ack. */
  private publishUncut(): void {
    while (this.failure === undefined && !this.resending && this.unacknowledged.length < publishesInFlightMax && this.uncutFrom < this.frames.nextLsn) {
      const message = this.cutMessage();
      this.unacknowledged.push(message);
      this.publishMessage(message);
    }
  }

  /** The next message: the uncut records from uncutFrom on, up to payloadBytesMax (at least one). */
  private cutMessage(): OutgoingMessage {
    const firstLsn = this.uncutFrom;
    const parts: Buffer[] = [];
    let bytes = 0;
    for (let lsn = firstLsn; lsn < this.frames.nextLsn; lsn++) {
      const frame = this.frames.get(lsn);
      // Only a fence holds no frame, and it is acknowledged before any record is appended.
      assert(frame !== undefined, 'an uncut LSN holds a record');
      if (parts.length > 0 && bytes + frame.length > this.payloadBytesMax) break;
      parts.push(frame);
      bytes += frame.length;
    }
    const lastLsn = firstLsn + parts.length - 1;
    this.uncutFrom = lastLsn + 1;
    const message = this.ownMessage(firstLsn, lastLsn, parts.length === 1 ? parts[0]! : Buffer.concat(parts, bytes));
    this.frames.endMessage(message.sequence, lastLsn);
    return message;
  }

  /**
   * This writer's next message, at the next sequence (the caller holds it there), behind its previous one (see Fencing above): the same
   * message always goes out with the same id and expectations, so a resend is either stored or answered as a
   * duplicate.
   */
  private ownMessage(firstLsn: Lsn, lastLsn: Lsn, payload: Uint8Array, headers?: MsgHdrs): OutgoingMessage {
    const sequence = this.frames.nextSequence;
    const msgID = `${this.writerId}:${firstLsn}`;
    const expect = this.lastOwnMessageId === undefined ? { lastSequence: sequence - 1 } : { lastSequence: sequence - 1, lastMsgID: this.lastOwnMessageId };
    const options: Partial<JetStreamPublishOptions> = { msgID, expect, timeout: publishAttemptMs, ...(headers !== undefined ? { headers } : {}) };
    this.lastOwnMessageId = msgID;
    return { sequence, firstLsn, lastLsn, payload, options };
  }

  private publishMessage(message: OutgoingMessage): void {
    const round = this.resendRound;
    this.js.publish(this.subject, message.payload, message.options).then(
      (ack) => this.acknowledged(message, ack),
      (error: unknown) => this.publishFailed(message, round, error),
    );
  }

  private acknowledged(message: OutgoingMessage, ack: PubAck): void {
    if (this.failure !== undefined) return;
    // A duplicate is a resend of a message the stream already holds: fine, if at its own sequence.
    if (ack.seq !== message.sequence) {
      this.fail(`JetStream stored the message of LSNs ${message.firstLsn}..${message.lastLsn} at sequence ${ack.seq}${ack.duplicate ? ' (as a duplicate)' : ''} where ${message.sequence} was expected; the log and the stream disagree`, undefined);
      return;
    }
    this.outageSince = undefined;
    // The chain of expectations makes an ack for a message an ack for every message before it.
    if (message.lastLsn > this.durable) this.durable = message.lastLsn;
    while (this.unacknowledged.length > 0 && this.unacknowledged[0]!.lastLsn <= this.durable) this.unacknowledged.shift();
    while (this.waiters.length > 0 && this.waiters[0]!.lsn <= this.durable) this.waiters.shift()!.resolve();
    if (this.uncutFrom < this.frames.nextLsn) this.scheduleCut();
  }

  /**
   * Another writer's message in the way fails the log at once. Anything else (a timeout: the server this client
   * was connected to died, or the stream is electing a leader; no responders) resends every unacknowledged
   * message, in order, after a short pause, until publishTimeoutMs has passed without an ack.
   */
  private publishFailed(message: OutgoingMessage, round: number, error: unknown): void {
    if (this.failure !== undefined) return;
    if (error instanceof JetStreamApiError && isWrongLast(error) && !this.isOwnGap(message, error)) {
      this.fail(`another writer appended to stream ${this.stream} (the message of LSNs ${message.firstLsn}..${message.lastLsn} was refused: ${errorText(error)}); this node no longer writes`, error, 'EDEPOSED');
      return;
    }
    // A later round resends this one already, or a later attempt got it acknowledged.
    if (round !== this.resendRound || message.lastLsn <= this.durable) return;
    const now = performance.now();
    this.outageSince ??= now;
    if (now - this.outageSince > this.settings.publishTimeoutMs) {
      this.fail(`JetStream did not acknowledge LSN ${message.firstLsn} within ${this.settings.publishTimeoutMs} ms: ${errorText(error)}`, error);
      return;
    }
    this.resendRound++;
    this.resending = true;
    const [first, last] = [this.unacknowledged[0], this.unacknowledged[this.unacknowledged.length - 1]];
    this.settings.logger.warn({ stream: this.stream, fromSequence: first?.sequence, toSequence: last?.sequence, fromLsn: first?.firstLsn, toLsn: last?.lastLsn, err: error }, 'JetStream did not acknowledge a message; resending the unacknowledged ones');
    setTimeout(() => {
      this.resending = false;
      if (this.failure !== undefined) return;
      for (const resend of this.unacknowledged) this.publishMessage(resend);
      this.publishUncut();
    }, resendPauseMs);
  }

  /**
   * Refused because one of this writer's own earlier messages is missing before it (lost with a server, while
   * later ones got through): the stream ends below its expected sequence, or with this writer's own message id.
   * The resend round fills the gap; were another writer there, the round's first message would be refused for
   * good.
   */
  private isOwnGap(message: OutgoingMessage, error: JetStreamApiError): boolean {
    const sequence = /wrong last sequence: (\d+)/.exec(error.message);
    if (sequence !== null) return Number(sequence[1]) < message.sequence - 1;
    const messageId = /wrong last msg ID: (\S*)/.exec(error.message);
    return messageId !== null && messageId[1]!.startsWith(`${this.writerId}:`);
  }

  private waitDurable(lsn: Lsn): Promise<void> {
    if (lsn <= this.durable) return Promise.resolve();
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      // Waiters arrive in LSN order almost always; keep the queue sorted for those that do not (sync, snapshots).
      let at = this.waiters.length;
      while (at > 0 && this.waiters[at - 1]!.lsn > lsn) at--;
      this.waiters.splice(at, 0, { lsn, resolve, reject });
    });
  }

  /** Takes the next sequence and LSN with a fence message: a writer that read the stream before it can append no more. */
  private async publishFence(): Promise<void> {
    // A deposed writer may still be appending (its lease expired while it was paused): its records that land
    // before the fence are the log's; read them and fence again after them, until the fence lands.
    for (let attempt = 1; ; attempt++) {
      const lsn = this.frames.nextLsn;
      assert(this.durable === lsn - 1 && this.unacknowledged.length === 0, 'a fence is published before any append');
      const fence = this.ownMessage(lsn, lsn, new Uint8Array(0), fenceHeaders(lsn));
      try {
        const ack = await this.js.publish(this.subject, fence.payload, fence.options);
        assert(ack.seq === fence.sequence, 'the fence took the expected sequence');
        this.frames.holdMessage(fence.sequence, lsn, [undefined]);
        this.durable = lsn;
        this.uncutFrom = lsn + 1;
        return;
      } catch (error) {
        this.lastOwnMessageId = undefined;
        if (!(error instanceof JetStreamApiError && isWrongLast(error)) || attempt >= fenceAttemptsMax) throw error;
        const { last_seq: lastSeq } = (await this.manager.streams.info(this.stream)).state;
        await new StreamReader(this.js, this.stream, this.frames).readUntil(lastSeq);
        this.durable = this.frames.nextLsn - 1;
        this.uncutFrom = this.frames.nextLsn;
      }
    }
  }
}

async function ensureStream(manager: JetStreamManager, stream: string, replicas: number): Promise<{ messages: number; first_seq: number; last_seq: number }> {
  try {
    return (await manager.streams.info(stream)).state;
  } catch (error) {
    if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error;
  }
  const created = await manager.streams.add({
    name: stream,
    subjects: [`${stream}.log`],
    duplicate_window: nanos(duplicateWindowMs),
    num_replicas: replicas,
    storage: StorageType.File,
    allow_direct: true,
    description: 'Cairn log: each message a batch of record frames (each frame carries its LSN), or an empty writer fence',
  });
  return created.state;
}

/** Fence attempts at takeover while a deposed writer's records keep landing before it. */
const fenceAttemptsMax = 100;

/** Another message took the place this one expected: a wrong last sequence, or a wrong last message id (nats-server 2.9 gives that one no error code). */
function isWrongLast(error: JetStreamApiError): boolean {
  return error.code === JetStreamApiCodes.StreamWrongLastSequence || /wrong last (sequence|msg ID)/.test(error.message);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
