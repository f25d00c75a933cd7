/**
 * JetStreamLog: the broker's log (core/broker.ts BrokerLog) replicated by a
 * NATS JetStream stream (issue 17): each record is one message, its frame
 * encoded as in a segment (record.ts). Each opening of the log for writing
 * is a writer with an id of its own, and publishes on its own subject,
 * `<stream>.w.<writer id>`.
 *
 * LSN = the stream sequence. On a fresh stream LSNs start at 1, as on the
 * file log; each takeover by a new writer (open with `fence`) publishes one
 * fence message (empty) on its subject, which takes a sequence and holds no
 * record, so LSNs skip one there. Nothing in the broker needs LSNs without
 * gaps; a read of a fence's LSN is refused like any LSN without a record.
 *
 * Durability: append takes LSNs synchronously, in call order, and publishes
 * each record at once (pipelined, no batch window); its promise resolves when
 * JetStream has acknowledged the publish of its last record, i.e. when a
 * quorum of the stream's replicas stored it (R3: two of three). A PUBACK or a
 * confirm therefore waits for JetStream's ack, as on the file log it waits
 * for the fdatasync.
 *
 * Fencing: each message carries a message id, `<writer id>:<lsn>`, and
 * every publish but a writer's first expects both the sequence before it
 * (`Nats-Expected-Last-Sequence: lsn - 1`) and the id of this writer's
 * previous message there (`Nats-Expected-Last-Msg-Id`): the stream takes it
 * only if the message just before it is this writer's own. The sequence alone
 * is not enough with pipelined publishes: a deposed writer's publish still in
 * flight could land right after the new writer's records whenever their count
 * fits (the fencing test caught it). A writer's first message expects the
 * sequence it read up to. So a foreign message ends a writer's run for good:
 * two writers never interleave. (The per-subject expectation would say the
 * same, but JetStream does not take it pipelined.) The ids also feed the
 * stream's duplicate window, kept short (duplicateWindowMs) to bound the
 * servers' memory. One price: a stream leader that restarted and has seen no
 * message since forgets the last id once it is older than that window, and
 * refuses the writer's next append: the writer fails and a standby (or the
 * restart) takes over with a fence; nothing is lost.
 * A publish refused because another message took its place fails the log
 * for good (as a failed fdatasync does the file log: errors.ts
 * LogFailedError): appends are refused, nothing more is acknowledged,
 * `onFailed` is told; the broker stops and a restart reloads the stream. A
 * publish not acknowledged in time (the server this client talked to died,
 * the stream is electing a leader) is resent with everything after it, with
 * the same ids, until publishTimeoutMs passes without an ack; then the log
 * fails too.
 *
 * Reads are served from memory (held-frames.ts): the stream is read in full
 * at open, from its first message, and every appended frame is kept until
 * retention purges it.
 */
import { randomBytes } from 'node:crypto';
import { jetstream, JetStreamApiCodes, JetStreamApiError, jetstreamManager, StorageType, type JetStreamClient, type JetStreamManager, type PubAck } from '@nats-io/jetstream';
import { assert } from '../../assert.js';
import { silentLogger, type Logger } from '../../logger.js';
import { LogClosedError, LogError, LogFailedError, NoSuchRecordError } from '../errors.js';
import { checkAppendRecord, encodeFrame, type AppendRecord, type LogRecord, type Lsn } from '../record.js';
import type { RetentionPin } from '../log.js';
import { HeldFrames } from './held-frames.js';
import type { JetStreamAddress } from './jetstream-address.js';
import { connectToNats, nanos, type NatsConnection } from './nats-connection.js';
import { SnapshotBucket, type StoredSnapshot } from './snapshot-bucket.js';
import { decodeHeldFrame, StreamReader } from './stream-reader.js';

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
}

export const publishTimeoutMsDefault = 10_000;
/**
 * The stream's duplicate window: every message id is remembered this long by each server (memory), see Fencing.
 * It must outlast a record's resends (publishTimeoutMs), so that a resent record the stream holds is a duplicate.
 */
export const duplicateWindowMs = 30_000;
/** One publish attempt waits this long for its ack before the unacknowledged records are resent. */
const publishAttemptMs = 2_000;
const resendPauseMs = 100;

interface DurableWaiter {
  readonly lsn: Lsn;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
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
  /** The LSN of this writer's first message: every later one expects its predecessor's message id before it. */
  private firstOwnLsn: Lsn | undefined = undefined;
  /** Bumped when the unacknowledged records are resent: a failed attempt of an earlier round is covered by it. */
  private resendRound = 0;
  /** When publishes began failing with no ack since (undefined: no outage). */
  private outageSince: number | undefined = undefined;

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
    this.newestSnapshot = snapshot;
    this.subject = `${stream}.log`;
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
      // An empty stream reports first_seq 0 (fresh) or last_seq + 1 (all purged): either way, nothing to read before last_seq + 1.
      const frames = options.heldFrames ?? new HeldFrames(Math.max(1, state.messages === 0 ? state.last_seq + 1 : state.first_seq));
      await new StreamReader(js, address.stream, frames).readUntil(state.last_seq);
      const snapshots = await SnapshotBucket.open(connection, address.stream, replicas);
      const snapshot = await snapshots.load();
      const publishTimeoutMs = Math.min(options.publishTimeoutMs ?? publishTimeoutMsDefault, duplicateWindowMs);
      const settings = { publishTimeoutMs, logger, onFailed: options.onFailed };
      const log = new JetStreamLog(address.stream, connection, options.connection === undefined, js, manager, frames, snapshots, snapshot, settings);
      if (options.fence === true) await log.publishFence();
      logger.info({ stream: address.stream, firstLsn: frames.firstLsn, nextLsn: frames.nextLsn, snapshotLsn: snapshot?.lsn, fenced: options.fence === true }, 'opened the JetStream log');
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
      const frame = encodeFrame(lsn, records[i]!);
      this.frames.push(lsn, frame);
      this.publishRecord(lsn, frame);
      lsns[i] = lsn;
    }
    if (records.length === 0) return Promise.resolve(lsns);
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
    if (frame === undefined) throw new NoSuchRecordError(lsn, firstLsn, nextLsn - 1, 'its stream sequence holds a writer fence, not a record');
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
   * Purges the stream below the newest snapshot's LSN and below `keepFromLsn` (the oldest message a queue
   * still holds), never past either: the snapshot's own record stays, so the stream never ends up empty.
   */
  async applyRetention(pin: RetentionPin = {}): Promise<{ purged: number }> {
    if (this.failure !== undefined) throw this.failure;
    const snapshotLsn = this.newestSnapshot?.lsn;
    if (snapshotLsn === undefined) return { purged: 0 };
    const below = Math.min(snapshotLsn, pin.keepFromLsn ?? Number.POSITIVE_INFINITY, this.durable);
    if (below <= this.frames.firstLsn) return { purged: 0 };
    // `seq` purges every message with a lower sequence, not the one at `seq`.
    const { purged } = await this.manager.streams.purge(this.stream, { seq: below });
    this.frames.dropBelow(below);
    this.settings.logger.info({ stream: this.stream, purged, firstLsn: this.frames.firstLsn, snapshotLsn, keepFromLsn: pin.keepFromLsn }, 'retention applied');
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

  /**
   * Publishes the message of `lsn` behind this writer's previous one (see Fencing above). The same LSN always
   * goes out with the same message id and expectations, so a resend is either stored or answered as a duplicate.
   */
  private publish(lsn: Lsn, frame: Uint8Array): Promise<PubAck> {
    this.firstOwnLsn ??= lsn;
    const expect = lsn > this.firstOwnLsn ? { lastSequence: lsn - 1, lastMsgID: this.messageId(lsn - 1) } : { lastSequence: lsn - 1 };
    return this.js.publish(this.subject, frame, { msgID: this.messageId(lsn), expect, timeout: publishAttemptMs });
  }

  private messageId(lsn: Lsn): string {
    return `${this.writerId}:${lsn}`;
  }

  private publishRecord(lsn: Lsn, frame: Buffer): void {
    const round = this.resendRound;
    this.publish(lsn, frame).then(
      (ack) => this.acknowledged(lsn, ack),
      (error: unknown) => this.publishFailed(lsn, round, error),
    );
  }

  private acknowledged(lsn: Lsn, ack: PubAck): void {
    if (this.failure !== undefined) return;
    // A duplicate is a resend of a message the stream already holds: fine, if at its own sequence.
    if (ack.seq !== lsn) {
      this.fail(`JetStream stored LSN ${lsn} at sequence ${ack.seq}${ack.duplicate ? ' (as a duplicate)' : ''}; the log and the stream disagree`, undefined);
      return;
    }
    this.outageSince = undefined;
    // The chain of expectations makes an ack for `lsn` an ack for every LSN before it.
    if (lsn > this.durable) this.durable = lsn;
    while (this.waiters.length > 0 && this.waiters[0]!.lsn <= this.durable) this.waiters.shift()!.resolve();
  }

  /**
   * Another writer's message in the way fails the log at once. Anything else (a timeout: the server this client
   * was connected to died, or the stream is electing a leader; no responders) resends every unacknowledged
   * record, in order, after a short pause, until publishTimeoutMs has passed without an ack.
   */
  private publishFailed(lsn: Lsn, round: number, error: unknown): void {
    if (this.failure !== undefined) return;
    if (error instanceof JetStreamApiError && isWrongLast(error) && !this.isOwnGap(lsn, error)) {
      this.fail(`another writer appended to stream ${this.stream} (LSN ${lsn} was refused: ${errorText(error)}); this node no longer writes`, error, 'EDEPOSED');
      return;
    }
    // A later round resends this one already, or a later attempt got it acknowledged.
    if (round !== this.resendRound || lsn <= this.durable) return;
    const now = performance.now();
    this.outageSince ??= now;
    if (now - this.outageSince > this.settings.publishTimeoutMs) {
      this.fail(`JetStream did not acknowledge LSN ${lsn} within ${this.settings.publishTimeoutMs} ms: ${errorText(error)}`, error);
      return;
    }
    this.resendRound++;
    const from = this.durable + 1;
    const to = this.frames.nextLsn - 1;
    this.settings.logger.warn({ stream: this.stream, from, to, err: error }, 'JetStream did not acknowledge a record; resending the unacknowledged ones');
    setTimeout(() => {
      if (this.failure !== undefined) return;
      for (let resend = Math.max(from, this.durable + 1); resend <= to; resend++) {
        const frame = this.frames.get(resend);
        // Only a fence holds no frame, and it is acknowledged before any record is appended.
        assert(frame !== undefined, 'an unacknowledged LSN holds a record');
        this.publishRecord(resend, frame);
      }
    }, resendPauseMs);
  }

  /**
   * Refused because one of this writer's own earlier records is missing before it (lost with a server, while
   * later ones got through): the stream ends below lsn - 1, or with this writer's own message id. The resend
   * round fills the gap; were another writer there, the round's first record would be refused for good.
   */
  private isOwnGap(lsn: Lsn, error: JetStreamApiError): boolean {
    const sequence = /wrong last sequence: (\d+)/.exec(error.message);
    if (sequence !== null) return Number(sequence[1]) < lsn - 1;
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

  /** Takes the next sequence with a fence message: a writer that read the stream before it can append no more. */
  private async publishFence(): Promise<void> {
    // A deposed writer may still be appending (its lease expired while it was paused): its records that land
    // before the fence are the log's; read them and fence again after them, until the fence lands.
    for (let attempt = 1; ; attempt++) {
      const lsn = this.frames.nextLsn;
      assert(this.durable === lsn - 1, 'a fence is published before any append');
      try {
        const ack = await this.publish(lsn, new Uint8Array(0));
        assert(ack.seq === lsn, 'the fence took the expected sequence');
        this.frames.push(lsn, undefined);
        this.durable = lsn;
        return;
      } catch (error) {
        if (!(error instanceof JetStreamApiError && isWrongLast(error)) || attempt >= fenceAttemptsMax) throw error;
        const { last_seq: lastSeq } = (await this.manager.streams.info(this.stream)).state;
        await new StreamReader(this.js, this.stream, this.frames).readUntil(lastSeq);
        this.durable = this.frames.nextLsn - 1;
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
    description: 'Cairn log: one record per message, LSN = stream sequence',
  });
  return created.state;
}

/** Another message took the place this one expected: a wrong last sequence, or a wrong last message id (nats-server 2.9 gives that one no error code). */
/** Fence attempts at takeover while a deposed writer's records keep landing before it. */
const fenceAttemptsMax = 100;

function isWrongLast(error: JetStreamApiError): boolean {
  return error.code === JetStreamApiCodes.StreamWrongLastSequence || /wrong last (sequence|msg ID)/.test(error.message);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
