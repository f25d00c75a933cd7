/**
 * The slice of the log the core needs, so the core can run on the segmented
 * log or, in property tests, on an in-memory one with the same ordering rules.
 */
export interface CoreAppendRecord {
  readonly kind: number;
  readonly timestamp: number;
  readonly body: unknown;
}

export interface RecordLog {
  /** The LSN the next appended record gets; appends take LSNs synchronously, in call order. */
  readonly nextLsn: number;
  /** Resolves once the records are durable; `lazy` ones may wait a little for their fdatasync (nobody waits on them). */
  append(records: readonly CoreAppendRecord[], options?: { lazy?: boolean }): Promise<number[]>;
  /** Makes everything appended so far durable now, lazy records included. */
  sync(): Promise<void>;
  readonly failed: Error | undefined;
}

/** A RecordLog in memory: everything is "durable" at the next microtask. For tests and tools. */
export class MemoryLog implements RecordLog {
  readonly records: Array<CoreAppendRecord & { readonly lsn: number }> = [];
  failed: Error | undefined = undefined;

  get nextLsn(): number {
    return this.records.length + 1;
  }

  append(records: readonly CoreAppendRecord[]): Promise<number[]> {
    if (this.failed) return Promise.reject(this.failed);
    const lsns = records.map((record) => {
      const lsn = this.nextLsn;
      this.records.push({ ...record, lsn });
      return lsn;
    });
    return Promise.resolve(lsns);
  }

  sync(): Promise<void> {
    return this.failed ? Promise.reject(this.failed) : Promise.resolve();
  }

  /** The record at `lsn` (a queued message's payload is read back this way). Throws ENORECORD, as the file log does, when it is not in the log. */
  readRecord(lsn: number): CoreAppendRecord & { readonly lsn: number } {
    const found = Number.isInteger(lsn) ? this.records[lsn - 1] : undefined;
    if (found === undefined) {
      const readable = this.records.length === 0 ? 'the log holds no record yet' : `readable: LSN 1..${this.records.length}`;
      throw Object.assign(new RangeError(`no record at LSN ${lsn}; ${readable}`), { code: 'ENORECORD' });
    }
    return found;
  }

  *read(from: { lsn?: number } = {}): IterableIterator<CoreAppendRecord & { readonly lsn: number }> {
    for (let i = Math.max(0, (from.lsn ?? 1) - 1); i < this.records.length; i++) yield this.records[i]!;
  }

  snapshot: { lsn: number; data: Uint8Array } | undefined = undefined;

  loadSnapshot(): { lsn: number; data: Uint8Array } | undefined {
    return this.snapshot;
  }

  writeSnapshot(lsn: number, data: Uint8Array): Promise<void> {
    this.snapshot = { lsn, data };
    return Promise.resolve();
  }
}
