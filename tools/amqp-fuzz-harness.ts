/**
 * The AMQP fuzzer's surroundings, shared by the fuzz test and the fuzz
 * benchmark: a real broker in this process (segmented log in a temporary
 * directory, the core, the AMQP listener on a free port), a record of every
 * warn/error log line and every uncaught exception or unhandled rejection,
 * and a canary — a well-behaved amqplib client on its own connection that
 * publishes persistent messages with confirms and consumes them, one round
 * trip after another, for as long as the fuzzer runs.
 *
 * Nothing a fuzz case does may reach the canary, log above info, or throw
 * out of the broker: `problems()` lists whatever did. And when it is all
 * over, the durable queues must hold what the log says they hold.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import { pino } from 'pino';
import { Broker } from '../src/core/broker.js';
import { SegmentedLog } from '../src/log/index.js';
import { startAmqpServer, type AmqpServer } from '../src/protocols/amqp/server.js';
import { ProcessErrorWatch } from './process-error-watch.js';

export interface FuzzBroker {
  readonly port: number;
  /** Live AMQP connections, the canary's included. */
  connections(): number;
  /** Warn/error log lines, uncaught exceptions and unhandled rejections seen so far. */
  problems(): readonly string[];
  /**
   * Once every client is gone: where a durable queue's persistent messages
   * in the runtime differ from those the log says it holds (empty when they
   * agree). It takes every message out of the queues, so it is the last
   * thing before close.
   */
  durableMismatches(): Promise<string[]>;
  close(): Promise<void>;
}

/** Start a broker whose every warn/error line and every stray exception is kept. */
export async function startFuzzBroker(): Promise<FuzzBroker> {
  const logLines: string[] = [];
  const processErrors = ProcessErrorWatch.start();
  const lines = new Writable({
    write(chunk: Buffer, _encoding, done): void {
      logLines.push(`log: ${chunk.toString().trim()}`);
      done();
    },
  });
  const logger = pino({ level: 'warn', base: null }, lines);
  const dir = mkdtempSync(join(tmpdir(), 'cairn-fuzz-amqp-'));
  const log = await SegmentedLog.open({ dir, logger });
  const broker = Broker.open({ log, logger });
  let server: AmqpServer;
  try {
    server = await startAmqpServer({ core: broker.amqp, host: '127.0.0.1', port: 0, logger });
  } catch (error) {
    await log.close();
    throw error;
  }
  return {
    port: server.port,
    connections: () => server.connections(),
    // Thrown errors first: the log line an escaping error may cause comes after it.
    problems: () => [...processErrors.errors.map((error) => `thrown in the process: ${describe(error)}`), ...logLines],
    durableMismatches: () => durableMismatches(broker),
    close: async () => {
      await server.close();
      await broker.flush();
      await log.close();
      rmSync(dir, { recursive: true, force: true });
      processErrors.stop();
    },
  };
}

async function durableMismatches(broker: Broker): Promise<string[]> {
  // Acks and deferred publishes are recorded at the end of their tick: let them land.
  await new Promise((resolve) => setImmediate(resolve));
  const mismatches: string[] = [];
  for (const runtime of broker.queues.values()) {
    if (!runtime.durable) continue;
    while (broker.amqp.get(runtime.name, { noAck: false, owner: 'fuzz-check' }).delivery !== undefined);
    const live = [...runtime.unacked.values()].filter((entry) => entry.durable).map((entry) => entry.seq).sort((a, b) => a - b);
    const logged = [...(broker.state.queues.get(runtime.name)?.pending.keys() ?? [])].sort((a, b) => a - b);
    if (live.join() !== logged.join()) mismatches.push(`durable queue '${runtime.name}': runtime holds seqs [${live.join(',')}], the log [${logged.join(',')}]`);
  }
  for (const name of broker.state.queues.keys()) {
    if (broker.queues.get(name)?.durable !== true) mismatches.push(`the log holds durable queue '${name}', the runtime does not`);
  }
  return mismatches;
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

/** A round trip that takes longer than this, while fuzz cases run beside it, counts as the canary starving. */
const roundTripTimeoutMs = 10_000;

/**
 * The well-behaved client: publish one persistent message to its durable
 * queue, wait for the confirm and the delivery, ack, repeat until stopped.
 */
export class AmqpCanary {
  roundTrips = 0;
  slowestRoundTripMs = 0;
  readonly failures: string[] = [];
  private stopping = false;
  private loop: Promise<void> = Promise.resolve();
  private stopped: Promise<void> = Promise.resolve();
  private readonly waiting = new Map<string, () => void>();

  private constructor(
    private readonly connection: ChannelModel,
    private readonly channel: ConfirmChannel,
    private readonly queue: string,
  ) {}

  static async start(port: number, queue: string): Promise<AmqpCanary> {
    const connection = await amqp.connect(`amqp://127.0.0.1:${port}`);
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue(queue, { durable: true });
    const canary = new AmqpCanary(connection, channel, queue);
    connection.on('error', (error: unknown) => canary.failures.push(`canary connection error: ${describe(error)}`));
    connection.on('close', () => {
      if (!canary.stopping) canary.failures.push('canary connection closed by the broker');
    });
    channel.on('error', (error: unknown) => canary.failures.push(`canary channel error: ${describe(error)}`));
    await channel.consume(queue, (message) => {
      if (message === null) return;
      channel.ack(message);
      const body = message.content.toString();
      canary.waiting.get(body)?.();
      canary.waiting.delete(body);
    });
    canary.loop = canary.run();
    return canary;
  }

  private async run(): Promise<void> {
    while (!this.stopping && this.failures.length === 0) {
      try {
        await this.roundTrip();
      } catch (error: unknown) {
        this.failures.push(`canary round trip ${this.roundTrips + 1} failed: ${describe(error)}`);
      }
    }
  }

  /** One message published with confirms and received back; rejects after roundTripTimeoutMs. */
  async roundTrip(): Promise<void> {
    const started = performance.now();
    const body = `canary-${this.roundTrips + 1}-${Math.random()}`;
    let timer: NodeJS.Timeout | undefined;
    const delivered = new Promise<void>((resolve, reject) => {
      this.waiting.set(body, resolve);
      timer = setTimeout(() => reject(new Error(`no delivery within ${roundTripTimeoutMs} ms`)), roundTripTimeoutMs);
    });
    try {
      this.channel.sendToQueue(this.queue, Buffer.from(body), { persistent: true });
      await this.channel.waitForConfirms();
      await delivered;
    } finally {
      clearTimeout(timer);
      this.waiting.delete(body);
    }
    this.roundTrips++;
    this.slowestRoundTripMs = Math.max(this.slowestRoundTripMs, performance.now() - started);
  }

  /** Stop the loop after its current round trip, then close the connection; once, however often it is called. */
  stop(): Promise<void> {
    if (!this.stopping) {
      this.stopping = true;
      this.stopped = this.loop.then(() => this.connection.close());
    }
    return this.stopped;
  }
}
