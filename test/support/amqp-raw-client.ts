/**
 * A raw AMQP 0-9-1 client built on Cairn's own codec, for tests that must
 * send what a well-behaved library never sends (garbage, misplaced frames,
 * acks followed at once by a hang-up) and see the exact frames that come back.
 */
import { connect as netConnect, type Socket } from 'node:net';
import {
  decodeMethod, encodeMessage, encodeMethodFrame, encodeProperties, FRAME_TYPE, FrameReader, NEED_MORE, PROTOCOL_HEADER,
  type AmqpMethod, type AmqpMethodInput, type AmqpMethodName, type AmqpMethodNamed, type ContentMethodInput, type Frame,
} from '../../src/protocols/amqp/codec/index.js';

export type ReceivedMethod = AmqpMethod & { readonly channel: number };

export class RawClient {
  private readonly reader = new FrameReader(1 << 24);
  private readonly frames: Frame[] = [];
  private wake: (() => void) | undefined;
  private parsing = false;
  /** Every byte the server sent, for the protocol-header test. */
  readonly bytes: Buffer[] = [];
  closed = false;
  readonly whenClosed: Promise<void>;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.bytes.push(chunk);
      if (this.parsing) this.reader.push(chunk);
      this.parse();
    });
    socket.on('error', () => undefined);
    this.whenClosed = new Promise((resolve) => socket.on('close', () => {
      this.closed = true;
      this.wake?.();
      resolve();
    }));
  }

  static connect(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = netConnect({ port, host: '127.0.0.1' }, () => resolve(new RawClient(socket)));
      socket.once('error', reject);
    });
  }

  write(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  sendHeader(): void {
    this.parsing = true;
    this.write(PROTOCOL_HEADER);
  }

  send(channel: number, method: AmqpMethodInput): void {
    this.write(encodeMethodFrame(channel, method));
  }

  sendMessage(channel: number, method: ContentMethodInput, body: Buffer, properties = encodeProperties({})): void {
    this.write(encodeMessage({ channel, method, rawProperties: properties, body }, 4096));
  }

  private parse(): void {
    for (;;) {
      const frame = this.reader.readFrame();
      if (frame === NEED_MORE) break;
      this.frames.push(frame);
    }
    this.wake?.();
  }

  async nextFrame(timeoutMs = 2_000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    while (this.frames.length === 0) {
      if (this.closed) throw new Error('socket closed while waiting for a frame');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('timed out waiting for a frame');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return this.frames.shift()!;
  }

  /** The next method frame, skipping heartbeats. */
  async nextMethod(timeoutMs = 2_000): Promise<ReceivedMethod> {
    for (;;) {
      const frame = await this.nextFrame(timeoutMs);
      if (frame.type === FRAME_TYPE.METHOD) return { ...decodeMethod(frame.payload), channel: frame.channel };
      if (frame.type !== FRAME_TYPE.HEARTBEAT) throw new Error(`expected a method frame, got type ${frame.type}`);
    }
  }

  async expect<N extends AmqpMethodName>(name: N, timeoutMs = 2_000): Promise<AmqpMethodNamed<N> & { readonly channel: number }> {
    const method = await this.nextMethod(timeoutMs);
    if (method.name !== name) throw new Error(`expected ${name}, got ${JSON.stringify(method, (_key, value: unknown) => (typeof value === 'bigint' ? String(value) : value))}`);
    return method as AmqpMethodNamed<N> & { readonly channel: number };
  }

  /** Frames still buffered (already received), for "nothing else arrived" checks. */
  get pendingFrames(): number {
    return this.frames.length;
  }

  /** Header, start-ok, tune-ok, open; returns what connection.tune proposed. */
  async handshake(options: { heartbeat?: number; frameMax?: number; vhost?: string; mechanism?: string; response?: Buffer } = {}): Promise<AmqpMethodNamed<'connection.tune'>> {
    this.sendHeader();
    await this.expect('connection.start');
    this.send(0, {
      name: 'connection.start-ok', clientProperties: {}, mechanism: options.mechanism ?? 'PLAIN',
      response: options.response ?? Buffer.from('\u0000guest\u0000guest'), locale: 'en_US',
    });
    const tune = await this.expect('connection.tune');
    this.send(0, { name: 'connection.tune-ok', channelMax: 0, frameMax: options.frameMax ?? 4096, heartbeat: options.heartbeat ?? 0 });
    this.send(0, { name: 'connection.open', virtualHost: options.vhost ?? '/' });
    if ((options.vhost ?? '/') === '/') await this.expect('connection.open-ok');
    return tune;
  }

  async openChannel(channel: number): Promise<void> {
    this.send(channel, { name: 'channel.open' });
    await this.expect('channel.open-ok');
  }

  async waitClosed(timeoutMs = 2_000): Promise<void> {
    await Promise.race([
      this.whenClosed,
      new Promise((_, reject) => setTimeout(() => reject(new Error('socket still open')), timeoutMs)),
    ]);
  }

  destroy(): void {
    this.socket.destroy();
  }
}
