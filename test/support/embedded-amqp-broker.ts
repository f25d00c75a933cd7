/**
 * An in-process Cairn for AMQP integration tests (amqplib over real sockets),
 * with the clean-ups a test registers as it goes: `start` on a data directory,
 * `stop` and `start` again for a restart, channels whose errors the test reads
 * from the promises rather than from unhandled events. Call `cleanUp()` in
 * afterEach: connections close first, then the broker, then the directories.
 */
import amqp, { type Channel, type ChannelModel, type ConfirmChannel } from 'amqplib';
import { parseServeArgs } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { startCairn, type RunningCairn, type StartInternals } from '../../src/server.js';
import { tempDirectory } from './kit.js';

/** Everything in the queue now, by basic.get with no-ack, in order. */
export async function drain(channel: Channel, queue: string): Promise<string[]> {
  const bodies: string[] = [];
  for (;;) {
    const message = await channel.get(queue, { noAck: true });
    if (message === false) return bodies;
    bodies.push(message.content.toString());
  }
}

export class EmbeddedAmqpBroker {
  private readonly cleanups: Array<() => Promise<void> | void> = [];
  /** The broker of the running test; a restart stops it and starts another on the same directory. */
  private running: RunningCairn | undefined;

  async start(dataDir: string, flags: readonly string[] = [], internals: StartInternals = {}): Promise<RunningCairn> {
    const config = parseServeArgs(['--data', dataDir, '--amqp-port', '0', '--mqtt-port', 'off', '--http-port', 'off', ...flags], {});
    const running = await startCairn(config, silentLogger(), internals);
    this.running = running;
    this.cleanups.push(() => this.stop());
    return running;
  }

  async stop(): Promise<void> {
    const cairn = this.running;
    this.running = undefined;
    await cairn?.close();
  }

  dataDirectory(): string {
    const directory = tempDirectory();
    this.cleanups.push(() => directory.remove());
    return directory.path;
  }

  async connect(cairn: RunningCairn): Promise<ChannelModel> {
    const connection = await amqp.connect(`amqp://127.0.0.1:${cairn.amqpPort!}`);
    connection.on('error', () => undefined);
    this.cleanups.push(() => connection.close().catch(() => undefined));
    return connection;
  }

  async channel(cairn: RunningCairn): Promise<Channel> {
    const created = await (await this.connect(cairn)).createChannel();
    created.on('error', () => undefined);
    return created;
  }

  async confirmChannel(cairn: RunningCairn): Promise<ConfirmChannel> {
    const created = await (await this.connect(cairn)).createConfirmChannel();
    created.on('error', () => undefined);
    return created;
  }

  async cleanUp(): Promise<void> {
    for (const cleanup of this.cleanups.splice(0).reverse()) await cleanup();
  }
}
