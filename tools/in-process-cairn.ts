/**
 * A whole Cairn (startCairn: log, broker, listeners) inside this process, on
 * a temporary data directory, with its log lines kept in memory: for tests and
 * benches that must see the broker's own reaction (a thrown assertion, an
 * error line) rather than a child's exit code. `restart()` stops it and starts
 * it again on the same directory, so what comes back is what replay rebuilt.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { parseServeArgs } from '../src/config.js';
import type { Logger } from '../src/logger.js';
import { startCairn, type RunningCairn } from '../src/server.js';

/** One log line as pino wrote it (level: 20 debug, 30 info, 40 warn, 50 error, 60 fatal). */
export interface CapturedLogLine {
  readonly level: number;
  readonly msg?: string;
  readonly [field: string]: unknown;
}

export const logLevelError = 50;

export interface InProcessCairnOptions {
  /** Lines below this pino level are not kept (and, below it, not even formatted). Default 'debug'. */
  readonly logLevel?: 'debug' | 'info' | 'warn';
  /** Extra `cairn serve` flags, e.g. ['--mqtt-max-packet-bytes', '4096']. */
  readonly flags?: readonly string[];
  /** Keep at most this many log lines (the oldest are dropped); errors are always kept. Default 10,000. */
  readonly logLinesMax?: number;
}

export class InProcessCairn {
  readonly logLines: CapturedLogLine[] = [];
  /** Lines at error level or above, kept apart so a long run cannot push them out. */
  readonly errorLines: CapturedLogLine[] = [];

  private constructor(
    readonly dataDir: string,
    private running: RunningCairn,
    private readonly options: InProcessCairnOptions,
  ) {}

  static async start(options: InProcessCairnOptions = {}): Promise<InProcessCairn> {
    const dataDir = mkdtempSync(join(tmpdir(), 'cairn-in-process-'));
    const cairn = new InProcessCairn(dataDir, undefined as unknown as RunningCairn, options);
    cairn.running = await cairn.boot();
    return cairn;
  }

  get mqttPort(): number {
    const port = this.running.mqttPort;
    if (port === undefined) throw new Error('the MQTT listener is off');
    return port;
  }

  /** The running broker (its Broker and log), replaced by each restart. */
  get cairn(): RunningCairn {
    return this.running;
  }

  /** Stop and start again on the same data directory (everything comes back by replay). */
  async restart(): Promise<void> {
    await this.running.close();
    this.running = await this.boot();
  }

  /** Stop the broker and remove its data directory. */
  async stop(): Promise<void> {
    try {
      await this.running.close();
    } finally {
      rmSync(this.dataDir, { recursive: true, force: true });
    }
  }

  private boot(): Promise<RunningCairn> {
    const args = ['--data', this.dataDir, '--mqtt-port', '0', '--amqp-port', 'off', '--http-port', 'off', ...(this.options.flags ?? [])];
    return startCairn(parseServeArgs(args, {}), this.logger());
  }

  private logger(): Logger {
    const linesMax = this.options.logLinesMax ?? 10_000;
    const destination = {
      write: (line: string): void => {
        const parsed = JSON.parse(line) as CapturedLogLine;
        if (parsed.level >= logLevelError) this.errorLines.push(parsed);
        this.logLines.push(parsed);
        if (this.logLines.length > linesMax) this.logLines.splice(0, this.logLines.length - linesMax);
      },
    };
    return pino({ level: this.options.logLevel ?? 'debug', base: null }, destination);
  }
}
