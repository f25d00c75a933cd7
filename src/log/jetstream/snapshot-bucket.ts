/**
 * Snapshots of a JetStream log, in a JetStream object store bucket beside its
 * stream (`<stream>-snapshots`, same replicas): one object, `snapshot`, whose
 * metadata names the LSN it covers. A put replaces the previous object only
 * once the new one is complete (object store semantics), and a get verifies
 * the object's SHA-256 digest, so a half-written snapshot is never loaded.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { LogError } from '../errors.js';
import type { Lsn } from '../record.js';

const objectName = 'snapshot';
const loadAttemptMs = 5_000;
const loadAttemptsMax = 6;

export interface StoredSnapshot {
  readonly lsn: Lsn;
  readonly data: Uint8Array;
}

/** The bucket is created with the first snapshot: a replicated group per log costs a second when nobody snapshots. */
export class SnapshotBucket {
  private constructor(
    private readonly manager: Objm,
    private readonly name: string,
    private readonly replicas: number,
    private store: ObjectStore | undefined,
  ) {}

  static async open(connection: NatsConnection, stream: string, replicas: number): Promise<SnapshotBucket> {
    const manager = new Objm(connection);
    const name = `${stream}-snapshots`;
    const store = await manager.open(name).catch((error: unknown) => {
      if (error instanceof Error && error.message === 'object store not found') return undefined;
      throw error;
    });
    return new SnapshotBucket(manager, name, replicas, store);
  }

  /**
   * The newest snapshot. A read that overlaps the writer replacing the object can wait for chunks the
   * replacement purged and never end: each attempt is bounded, and the next one reads the new object.
   */
  async load(): Promise<StoredSnapshot | undefined> {
    for (let attempt = 1; ; attempt++) {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timed out'>((resolve) => { timer = setTimeout(() => resolve('timed out'), loadAttemptMs); });
      try {
        const loaded = await Promise.race([this.loadOnce(), timedOut]);
        if (loaded !== 'timed out') return loaded;
      } finally {
        clearTimeout(timer);
      }
      if (attempt >= loadAttemptsMax) throw new LogError('ESNAPSHOT', `the snapshot object of ${this.name} could not be read in ${loadAttemptsMax} attempts of ${loadAttemptMs} ms`);
    }
  }

  private async loadOnce(): Promise<StoredSnapshot | undefined> {
    if (this.store === undefined) return undefined;
    const info = await this.store.info(objectName);
    if (info === null || info.deleted) return undefined;
    const lsn = Number(info.metadata?.['lsn']);
    if (!Number.isSafeInteger(lsn) || lsn < 1) throw new LogError('ESNAPSHOT', `the snapshot object's metadata names no LSN (${JSON.stringify(info.metadata)})`);
    const data = await this.store.getBlob(objectName);
    // getBlob resolves null when the object vanished between info and get, and rejects on a digest mismatch.
    if (data === null) return undefined;
    // The client hands back a Buffer; the log's snapshots are plain bytes, as the file log's are.
    return { lsn, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
  }

  async save(lsn: Lsn, data: Uint8Array): Promise<void> {
    this.store ??= await this.manager.create(this.name, { replicas: this.replicas, description: 'Cairn snapshots of a log stream' });
    await this.store.putBlob({ name: objectName, metadata: { lsn: String(lsn) } }, data);
  }
}
