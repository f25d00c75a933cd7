/**
 * A progress bar on stderr for long scans, drawn only when stderr is a
 * terminal (io.isTTY); output to a pipe or a file stays plain. Redraws at
 * most every 100 ms so that drawing never shows in the scan's cost.
 */
export interface InspectIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly isTTY: boolean;
  /** Stops `records --follow` (tests; the CLI stops it with Ctrl-C). */
  readonly signal?: AbortSignal;
}

const redrawMs = 100;
const barWidth = 30;
const checkEveryRecords = 4096;

export class Progress {
  private done = 0;
  private lastDraw = 0;
  private drawn = false;

  constructor(private readonly io: InspectIo, private readonly label: string, private readonly total: number) {}

  /** Call once per record. */
  tick(): void {
    this.done++;
    if (!this.io.isTTY || this.done % checkEveryRecords !== 0) return;
    const now = Date.now();
    if (now - this.lastDraw < redrawMs) return;
    this.lastDraw = now;
    const fraction = this.total > 0 ? Math.min(1, this.done / this.total) : 0;
    const filled = Math.round(fraction * barWidth);
    this.io.stderr.write(`\r${this.label} [${'#'.repeat(filled)}${' '.repeat(barWidth - filled)}] ${(fraction * 100).toFixed(0).padStart(3)}% ${this.done}/${this.total} records`);
    this.drawn = true;
  }

  finish(): void {
    if (this.drawn) this.io.stderr.write('\r\u001b[2K');
    this.drawn = false;
  }
}
