/**
 * The log's operating errors: things that can happen to a data directory or a
 * disk (as opposed to broken invariants, which are assertions). Each carries a
 * stable `code` so callers and the CLI can branch on it without parsing text.
 */
import type { Lsn } from './record.js';

export class LogError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** The directory holds files, but none of them is a Cairn segment: never touch foreign data. */
export class NotACairnLogError extends LogError {
  constructor(
    readonly dir: string,
    readonly entries: readonly string[],
  ) {
    const shown = entries.slice(0, 5).join(', ') + (entries.length > 5 ? ', …' : '');
    const holds = entries.length === 0 ? 'it holds no segment files' : `it holds ${entries.length} other file(s) (${shown}) and no segment files`;
    super('ENOTCAIRN', `${dir} is not a Cairn log directory: ${holds}; refusing to use it`);
  }
}

/** A segment file whose header is not a Cairn segment header of a version we can read. */
export class SegmentHeaderError extends LogError {
  constructor(
    readonly segment: string,
    reason: string,
  ) {
    super('ESEGMENTHEADER', `segment ${segment} has a bad header: ${reason}`);
  }
}

/**
 * A record that fails its checks somewhere a torn write cannot explain (a
 * non-last segment, or followed by valid records). Acknowledged data may be
 * damaged, so the log refuses to guess; `cairn inspect verify` shows the range.
 */
export class CorruptRecordError extends LogError {
  constructor(
    readonly segment: string,
    readonly lsn: Lsn,
    readonly offset: number,
    readonly reason: string,
  ) {
    super('ECORRUPTRECORD', `corrupt record in segment ${segment} at LSN ${lsn} (byte offset ${offset}): ${reason}; this is not a torn tail, refusing to continue (inspect with \`cairn inspect verify\`)`);
  }
}

/**
 * A read by LSN of a record the log does not hold: retired by retention, not
 * appended yet, or lost. The message says which LSNs can be read.
 */
export class NoSuchRecordError extends LogError {
  constructor(
    readonly lsn: Lsn,
    readonly firstLsn: Lsn,
    /** The last readable LSN (firstLsn - 1 when none is). */
    readonly lastLsn: Lsn,
    why: string,
  ) {
    const readable = lastLsn < firstLsn ? `the log holds no record yet (the next LSN is ${firstLsn})` : `readable: LSN ${firstLsn}..${lastLsn}`;
    super('ENORECORD', `no record at LSN ${lsn}: ${why}; ${readable}`);
  }
}

/** A read by LSN failed in the file system (EIO, a descriptor refused): the record may be intact. */
export class RecordReadError extends LogError {
  constructor(
    readonly segment: string,
    readonly lsn: Lsn,
    cause: unknown,
  ) {
    super('ERECORDREAD', `reading LSN ${lsn} from segment ${segment} failed: ${errorText(cause)}`, { cause });
  }
}

/** Segments or snapshots that do not fit together (an LSN gap, a snapshot past the end of the log). */
export class LogInconsistentError extends LogError {
  constructor(message: string, code = 'EINCONSISTENT') {
    super(code, message);
  }
}

/**
 * The newest valid snapshot covers records past the log's last one: the
 * newest segment(s) are gone, and with them any acknowledged records after
 * the snapshot. Start-up refuses until the operator accepts the loss, naming
 * the LSN the log ends at (so an override left in place cannot hide a later,
 * different loss). The message names the `cairn serve` flag: it is what the
 * operator reads.
 */
export class LostRecordsError extends LogInconsistentError {
  constructor(
    readonly endLsn: Lsn,
    readonly snapshotLsn: Lsn,
    accepted: Lsn | undefined,
  ) {
    const unrestorable = snapshotLsn - 1 > endLsn ? ` and point-in-time recovery for LSN ${endLsn + 1}..${snapshotLsn - 1}` : '';
    const mismatch = accepted === undefined ? '' : `--accept-lost-records-after ${accepted} does not apply (the log ends at LSN ${endLsn}, not ${accepted}); `;
    super(
      `${mismatch}the log ends at LSN ${endLsn} but the newest valid snapshot covers LSN ${snapshotLsn}: the newest segment(s) are missing, and with them every record after LSN ${endLsn}, `
      + `acknowledged ones included; refusing to start. To start from the snapshot anyway, losing for good the records after LSN ${snapshotLsn}${unrestorable}, `
      + `restore the missing segment(s) or run with --accept-lost-records-after ${endLsn}`,
      'ELOSTRECORDS',
    );
  }
}

/**
 * A write or fsync failed. After a failed fsync the kernel may have dropped the
 * dirty pages, so retrying could falsely succeed: the log stops acking for good
 * and the owner is told (LogOptions.onFailed); `cairn serve` then stops
 * (fail-stop, exit 74) and its restart recovers from what is on disk.
 */
export class LogFailedError extends LogError {
  constructor(message: string, cause: unknown, code = 'ELOGFAILED') {
    super(code, message, { cause });
  }
}

/**
 * ENOSPC on a write: as fatal as any other write failure, but worth its own
 * name. Not a refusal of one batch: its records already have LSNs, the
 * records after them are encoded behind them, and the broker applied them to
 * its live state as it appended them (core/committer.ts), so skipping the
 * batch would leave live state ahead of the log and a gap in the LSN chain.
 * Part of the batch may be on disk; recovery after the restart treats it as a
 * torn tail. (Zero fill allocates the active segment ahead of the writer, so a
 * full disk usually shows first as a refused fill, which is only a warning.)
 */
export class DiskFullError extends LogFailedError {
  constructor(cause: unknown) {
    super(`the disk is full (ENOSPC); the log refuses further appends until restarted: ${errorText(cause)}`, cause, 'ENOSPC');
  }
}

export class LogClosedError extends LogError {
  constructor() {
    super('ECLOSED', 'the log is closed');
  }
}

/** A record the caller built wrongly (kind out of range, timestamp not finite, body not encodable or too big). */
export class InvalidRecordError extends LogError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('EINVALIDRECORD', message, options);
  }
}

/** Maps an fs failure to the fatal error the log reports from then on. */
export function toLogFailedError(cause: unknown, during: string): LogFailedError {
  if (cause instanceof LogFailedError) return cause;
  if (isErrnoCode(cause, 'ENOSPC')) return new DiskFullError(cause);
  return new LogFailedError(`${during} failed, the log refuses further appends until restarted: ${errorText(cause)}`, cause);
}

/**
 * The process (EMFILE) or the system (ENFILE) is out of file descriptors. An
 * open that fails so has created nothing: a refusal for now, not damage.
 */
export function isDescriptorShortage(error: unknown): boolean {
  return isErrnoCode(error, 'EMFILE') || isErrnoCode(error, 'ENFILE');
}

export function isErrnoCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
