/**
 * The disk-free alarm: while the file system holding the log has less free
 * space than --disk-free-limit, publishers are held back (AMQP
 * connection.blocked, reading paused), as RabbitMQ's disk alarm does. The log
 * itself cannot wait for space: a write that meets ENOSPC fails the log for
 * good (log/errors.ts, fail-stop), so writers must stop before the disk is
 * full. Consumers go on: their acks free space.
 *
 * Free space is polled (statfs) every `checkIntervalMs`; the alarm clears
 * when free space is back at or above the limit.
 */
import { statfs } from 'node:fs/promises';

export type FreeBytes = (dir: string) => Promise<number>;

export const statfsFreeBytes: FreeBytes = async (dir) => {
  const stats = await statfs(dir);
  return stats.bavail * stats.bsize;
};

export interface DiskFreeAlarmOptions {
  readonly dir: string;
  /** 0: never raised. */
  readonly limitBytes: number;
  readonly checkIntervalMs: number;
  readonly freeBytes?: FreeBytes;
  /** Told when the alarm is raised (with its reason) and cleared (undefined), and the free bytes seen. */
  readonly changed: (reason: string | undefined, freeBytes: number) => void;
  readonly failed: (error: unknown) => void;
}

export const diskFreeCheckIntervalMs = 1_000;

export class DiskFreeAlarm {
  private reasonValue: string | undefined = undefined;
  private timer: NodeJS.Timeout | undefined = undefined;
  private checking = false;

  constructor(private readonly options: DiskFreeAlarmOptions) {}

  /** Why publishers are held back now, or undefined. */
  get reason(): string | undefined {
    return this.reasonValue;
  }

  /** Checks once now, then every interval. */
  async start(): Promise<void> {
    if (this.options.limitBytes === 0) return;
    await this.check();
    this.timer = setInterval(() => void this.check(), this.options.checkIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const free = await (this.options.freeBytes ?? statfsFreeBytes)(this.options.dir);
      const low = free < this.options.limitBytes;
      // RabbitMQ's words: clients show the reason of connection.blocked as it is.
      const reason = low ? 'low on disk' : undefined;
      if (reason === this.reasonValue) return;
      this.reasonValue = reason;
      this.options.changed(reason, free);
    } catch (error) {
      this.options.failed(error);
    } finally {
      this.checking = false;
    }
  }
}
