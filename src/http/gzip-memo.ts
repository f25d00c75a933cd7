/**
 * The last gzipped answer of a few request targets, given again while the
 * plain bytes are the same: a monitoring load asks for the same queue lists
 * every second, and over idle queues they are the same bytes each time
 * (issue 15: gzipping the two lists of 1,000 queues took the thread pool
 * ~10 M instructions a scrape round and the event loop ~0.5 M, a stream and
 * two callbacks per call; comparing the bytes is one memcmp). What is kept:
 * a copy of the plain bytes (answers are written into pooled buffers that are
 * reused once sent) and the gzip output, for at most `targetsMax` targets,
 * the least recently asked for evicted first.
 */
import { gzipOnPool } from './answer-encoding.js';

/** Targets kept: a scrape round gzips three (/metrics/per-object and the two queue lists). */
export const gzipMemoTargets = 4;

export class GzipMemo {
  private readonly kept = new Map<string, { readonly plain: Buffer; readonly gzipped: Buffer }>();

  constructor(
    private readonly compress: (bytes: Buffer) => Promise<Buffer> = gzipOnPool,
    private readonly targetsMax = gzipMemoTargets,
  ) {}

  /** `bytes` gzipped: the answer kept for `target` when it was gzipped from the same bytes, else a new one (then kept). */
  async gzip(target: string, bytes: Buffer): Promise<Buffer> {
    const last = this.kept.get(target);
    this.kept.delete(target);
    if (last !== undefined && last.plain.equals(bytes)) {
      this.kept.set(target, last);
      return last.gzipped;
    }
    const plain = Buffer.from(bytes);
    const gzipped = await this.compress(plain);
    this.kept.delete(target);
    this.kept.set(target, { plain, gzipped });
    for (const evicted of this.kept.keys()) {
      if (this.kept.size <= this.targetsMax) break;
      this.kept.delete(evicted);
    }
    return gzipped;
  }
}
