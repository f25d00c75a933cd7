/**
 * Runs one AMQP fuzz case (amqp-fuzz-cases.ts) over a fresh TCP connection:
 * reach the case's context with a well-formed handshake, write its bytes in
 * one write, then watch what the broker does and say how that differs from
 * what it owes (`violation`, undefined when it behaved).
 *
 * The client answers every connection.close with close-ok, as a real client
 * does, so a broker waiting for close-ok is never what keeps a socket open.
 * Bytes the broker sends that do not decode are a violation too.
 */
import { connect as netConnect, type Socket } from 'node:net';
import {
  decodeMethod, encodeMethodFrame, FRAME_TYPE, FrameReader, NEED_MORE, PROTOCOL_HEADER,
  type AmqpMethod, type AmqpMethodInput,
} from '../src/protocols/amqp/codec/index.js';
import { fuzzFrameMaxBytes, type FuzzCase } from './amqp-fuzz-cases.js';

export interface FuzzCaseResult {
  /** What went wrong, in one sentence; undefined when the broker did what it owes. */
  readonly violation: string | undefined;
  /** Reply codes of the connection.close frames the broker sent. */
  readonly closeCodes: readonly number[];
}

/** How long the broker may take to react (a loaded 2-core machine running the suite included). */
const reactionTimeoutMs = 5_000;

/** Largest frame the broker may send us before tune (connection.start) or after (it agreed to ours). */
const serverFrameMaxBytes = 131_072;

class FuzzConnection {
  private readonly reader = new FrameReader(serverFrameMaxBytes);
  private readonly methods: AmqpMethod[] = [];
  private wake: (() => void) | undefined;
  private parsing = false;
  readonly closeCodes: number[] = [];
  undecodable: string | undefined;
  closed = false;

  constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => this.received(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed = true;
      this.wake?.();
    });
  }

  private received(chunk: Buffer): void {
    if (!this.parsing || this.undecodable !== undefined) return;
    this.reader.push(chunk);
    try {
      for (let frame = this.reader.readFrame(); frame !== NEED_MORE; frame = this.reader.readFrame()) {
        if (frame.type !== FRAME_TYPE.METHOD) continue;
        const method = decodeMethod(frame.payload);
        if (method.name === 'connection.close') {
          this.closeCodes.push(method.replyCode);
          this.send(0, { name: 'connection.close-ok' });
        }
        this.methods.push(method);
      }
    } catch (error: unknown) {
      this.undecodable = error instanceof Error ? error.message : String(error);
    }
    this.wake?.();
  }

  send(channel: number, method: AmqpMethodInput): void {
    this.write(encodeMethodFrame(channel, method));
  }

  write(bytes: Buffer): void {
    if (!this.socket.destroyed && !this.socket.writableEnded) this.socket.write(bytes);
  }

  end(): void {
    if (!this.socket.destroyed) this.socket.end();
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Resolves when `condition` holds or the socket closed or the deadline passed; says which held. */
  private async waitFor(condition: () => boolean, deadline: number): Promise<boolean> {
    while (!condition()) {
      const left = deadline - Date.now();
      if (this.closed || left <= 0) return false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return true;
  }

  /** The next method named `name`, skipping others; throws when it does not come. */
  async expect(name: AmqpMethod['name']): Promise<void> {
    const deadline = Date.now() + reactionTimeoutMs;
    const arrived = await this.waitFor(() => this.methods.some((method) => method.name === name), deadline);
    if (!arrived) throw new Error(`handshake: no ${name} from the broker (closed: ${this.closed}, close codes: ${this.closeCodes.join(',') || 'none'})`);
    this.methods.splice(0, this.methods.findIndex((method) => method.name === name) + 1);
  }

  startParsing(): void {
    this.parsing = true;
  }

  async waitClosed(): Promise<boolean> {
    return this.waitFor(() => this.closed, Date.now() + reactionTimeoutMs);
  }
}

function connect(port: number): Promise<FuzzConnection> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ port, host: '127.0.0.1' }, () => {
      socket.off('error', reject);
      resolve(new FuzzConnection(socket));
    });
    socket.setNoDelay(true);
    socket.once('error', reject);
  });
}

/** Header, start-ok, tune-ok (frame-max 4096), open, and channel 1 if asked. */
async function reach(connection: FuzzConnection, context: FuzzCase['context']): Promise<void> {
  if (context === 'raw') return;
  connection.startParsing();
  connection.write(PROTOCOL_HEADER);
  await connection.expect('connection.start');
  if (context === 'header') return;
  connection.send(0, { name: 'connection.start-ok', clientProperties: {}, mechanism: 'PLAIN', response: Buffer.from('\u0000guest\u0000guest'), locale: 'en_US' });
  await connection.expect('connection.tune');
  connection.send(0, { name: 'connection.tune-ok', channelMax: 0, frameMax: fuzzFrameMaxBytes, heartbeat: 0 });
  connection.send(0, { name: 'connection.open', virtualHost: '/' });
  await connection.expect('connection.open-ok');
  if (context === 'open') return;
  connection.send(1, { name: 'channel.open' });
  await connection.expect('channel.open-ok');
}

export async function runFuzzCase(port: number, fuzzCase: FuzzCase): Promise<FuzzCaseResult> {
  const connection = await connect(port);
  try {
    await reach(connection, fuzzCase.context);
    connection.write(fuzzCase.bytes);
    // Noise may be valid, or a frame cut short: the half-close says there is no more.
    if (fuzzCase.expect.kind === 'any') connection.end();
    const closed = await connection.waitClosed();
    return { violation: violationOf(fuzzCase, connection, closed), closeCodes: connection.closeCodes };
  } finally {
    connection.destroy();
  }
}

function violationOf(fuzzCase: FuzzCase, connection: FuzzConnection, closed: boolean): string | undefined {
  if (connection.undecodable !== undefined) return `the broker sent bytes that do not decode: ${connection.undecodable}`;
  if (!closed) return `the connection was still open ${reactionTimeoutMs} ms after the case (close codes: ${connection.closeCodes.join(',') || 'none'})`;
  const expected = fuzzCase.expect;
  if (expected.kind !== 'connection-close') return undefined;
  const first = connection.closeCodes[0];
  if (first !== expected.replyCode) return `expected connection.close ${expected.replyCode}, got ${first === undefined ? 'no connection.close' : first}`;
  return undefined;
}
