/**
 * Where a queued message's body comes from when it is delivered: queues hold
 * references (the LSN of the msg record), and the body is read back from the
 * log by LSN — one positioned read — unless the message is among the
 * recently published ones kept here, so a consumer that keeps up never
 * touches the disk.
 *
 * The cache is bounded by bytes and forgets the oldest first (publish order).
 * It keeps its own copy of a body that is a view into a larger buffer (a
 * socket read chunk, see unpinned-bytes.ts).
 * Reads from the log are not cached: a consumer draining an old backlog reads
 * each message once, and caching it would only push out the recent messages
 * that live consumers are about to need. Only the last few reads of small bodies are kept
 * (a handful of slots, by LSN): a queue's head is often read twice, once to
 * arm its expiry timer and once when a consumer takes it.
 */
import { storedMessageOf } from '../projections/apply.js';
import { RecordKind, type BrokerRecord, type MsgBody } from '../projections/records.js';
import type { StoredMessage } from '../projections/state.js';
import { pinsLargerBuffer, unpinned } from './unpinned-bytes.js';

/** A queued message's record could not be read (a damaged or missing segment): the message stays queued. */
export class MessageReadError extends Error {
  override readonly name = 'MessageReadError';
  readonly code = 'EMESSAGEREAD';
  constructor(readonly lsn: number, cause: unknown) {
    super(`cannot read the queued message at LSN ${lsn}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** A remembered LSN further than this past the window starts a new one (the window's slots cost 8 bytes each). */
const windowGapSlotsMax = 65_536;

/** Per cached message, beyond its payload and properties: the object, its strings and the map slot. */
const cachedMessageOverheadBytes = 160;

/** Messages read from the log that are kept for a second read: a few per queue being drained at once. */
const recentReadsMax = 16;
/** Only bodies up to this size are kept (at most 1 MiB in all, whatever the messages' sizes). */
export const recentReadBytesMax = 64 * 1024;

export class MessageStore {
  /**
   * The cache: a window over the LSNs from `firstLsn` on, slot i holding the message of LSN
   * firstLsn + head + i (or nothing: most LSNs are other records). A window rather than a Map: the
   * LSNs only grow, and a Map that sees a delete per publish spends its time on rehashing and on
   * walking tombstones to find its oldest key.
   */
  private slots: Array<StoredMessage | undefined> = [];
  private head = 0;
  private firstLsn = 0;
  private recentBytes = 0;
  /** The last messages read from the log, in a ring (a record at an LSN never changes, so they never go stale). */
  private readonly recentReads: Array<StoredMessage | undefined> = new Array<StoredMessage | undefined>(recentReadsMax).fill(undefined);
  private recentReadNext = 0;

  constructor(
    private readonly log: { readRecord(lsn: number): BrokerRecord; readonly nextLsn: number },
    private readonly cacheBytesMax: number,
  ) {}

  /** Bytes the cache holds now (metrics). */
  get cachedBytes(): number {
    return this.recentBytes;
  }

  /**
   * A message just published with this LSN: keep it for the consumers about to want it. A message
   * whose record is not appended yet (a publish deferred to the end of the tick) is kept whatever
   * the budget: until then the cache is the only place to read it from.
   */
  remember(message: StoredMessage): void {
    const lsn = message.lsn;
    if (this.head === this.slots.length) {
      this.slots = [];
      this.head = 0;
      this.firstLsn = lsn;
    }
    // Far past the window (a long stretch of other records since the last message): start a new
    // window rather than fill the gap with empty slots — unless a cached record is still unappended.
    const newest = this.slots[this.slots.length - 1];
    if (lsn - this.firstLsn - this.slots.length > windowGapSlotsMax && (newest === undefined || newest.lsn < this.log.nextLsn)) {
      this.slots = [];
      this.head = 0;
      this.firstLsn = lsn;
      this.recentBytes = 0;
    }
    const index = lsn - this.firstLsn;
    if (index < this.head || this.slots[index] !== undefined) return;
    while (this.slots.length < index) this.slots.push(undefined);
    this.slots[index] = unpinnedMessage(message);
    this.recentBytes += costOf(message);
    while (this.recentBytes > this.cacheBytesMax && this.head < this.slots.length) {
      const oldest = this.slots[this.head];
      if (oldest !== undefined) {
        if (oldest.lsn >= this.log.nextLsn) break;
        this.recentBytes -= costOf(oldest);
        this.slots[this.head] = undefined;
      }
      this.head++;
    }
    if (this.head > 4096 && this.head * 2 > this.slots.length) {
      this.slots = this.slots.slice(this.head);
      this.firstLsn += this.head;
      this.head = 0;
    }
  }

  /** The message whose msg record has this LSN. Throws MessageReadError when the log cannot give it. */
  read(lsn: number): StoredMessage {
    const index = lsn - this.firstLsn;
    if (index >= this.head && index < this.slots.length) {
      const cached = this.slots[index];
      if (cached !== undefined) return cached;
    }
    for (let i = 0; i < recentReadsMax; i++) {
      const recent = this.recentReads[i];
      if (recent !== undefined && recent.lsn === lsn) return recent;
    }
    let record: BrokerRecord;
    try {
      record = this.log.readRecord(lsn);
    } catch (error) {
      throw new MessageReadError(lsn, error);
    }
    if (record.kind !== RecordKind.msg) throw new MessageReadError(lsn, new Error(`the record at LSN ${lsn} is not a message (kind ${record.kind})`));
    const message = storedMessageOf(record.body as MsgBody, record.lsn, record.timestamp);
    if (message.payload.byteLength <= recentReadBytesMax) {
      this.recentReads[this.recentReadNext] = message;
      this.recentReadNext = (this.recentReadNext + 1) % recentReadsMax;
    }
    return message;
  }

  /** read(), a failed read returned rather than thrown: its consumer's connection goes, the message stays queued. */
  tryRead(lsn: number): StoredMessage | MessageReadError {
    try {
      return this.read(lsn);
    } catch (error) {
      if (error instanceof MessageReadError) return error;
      throw error;
    }
  }
}

/** `message`, or a copy whose body and properties no longer hold a much larger buffer alive. */
function unpinnedMessage(message: StoredMessage): StoredMessage {
  if (!pinsLargerBuffer(message.payload) && (message.properties === undefined || !pinsLargerBuffer(message.properties))) return message;
  return { ...message, payload: unpinned(message.payload), ...(message.properties !== undefined ? { properties: unpinned(message.properties) } : {}) };
}

function costOf(message: StoredMessage): number {
  return message.payload.byteLength + (message.properties?.byteLength ?? 0) + cachedMessageOverheadBytes;
}
