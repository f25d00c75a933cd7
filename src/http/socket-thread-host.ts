/**
 * The broker's side of the HTTP listener's socket thread (socket-thread.js,
 * a worker that owns the listening socket and its connections): starts it,
 * hands each request it forwards to `serve` and posts the answer back (the
 * body's bytes transferred, not copied), writes its log lines to the broker's
 * logger, passes a TLS reload on, and closes it.
 *
 * A worker that dies unexpectedly (a fault in it, not close()) is logged as
 * an error and started again on the same port after restartDelayMs, again
 * and again until it listens: the sockets carry no broker state, the MQTT and
 * AMQP listeners go on regardless, and an operator wants the management API
 * and the metrics back without restarting the broker. The requests it held
 * are lost with their connections; their answers are dropped.
 *
 * close() closes the worker's server and every connection, then terminates
 * the worker: nothing of it keeps the process alive afterwards.
 */
import { EventEmitter } from 'node:events';
import type { SecureContextOptions } from 'node:tls';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../logger.js';
import { Busy, noteBusy } from '../stage-timing.js';
import type { SecureContextHolder, TlsCredentials } from '../protocols/tls-credentials.js';
import type { ForwardedRequest, ListenFailure, PostedAnswer, SocketThreadCommand, SocketThreadEvent, SocketThreadSettings } from './socket-thread-protocol.js';

export interface SocketThread {
  readonly port: number;
  close(): Promise<void>;
}

/** The worker's entry, beside this module in src and in dist (tools/copy-plain-files.mjs copies it). */
const workerEntry = new URL('./socket-thread.js', import.meta.url);
/** A worker that died is started again after this long (ms): a fault that recurs at once does not spin a core. */
export const restartDelayMs = 1_000;

/**
 * Starts the socket thread on settings.port (0: a free one); rejects with the listen error (its `code`: EADDRINUSE...).
 * `entry` is the worker's module (tests start one that fails on purpose).
 */
export async function startSocketThread(settings: Omit<SocketThreadSettings, 'tls'>, serve: (request: ForwardedRequest) => Promise<PostedAnswer>, logger: Logger, tls?: TlsCredentials, entry: URL = workerEntry): Promise<SocketThread> {
  const host = new SocketThreadHost(settings, serve, logger, tls, entry);
  const port = await host.start(settings.port);
  return { port, close: () => host.close() };
}

/** Gives TlsCredentials.reload's new context to whichever worker serves now (register() takes this for a server). */
class SecureContextRelay extends EventEmitter implements SecureContextHolder {
  constructor(private readonly current: () => Worker | undefined) {
    super();
  }

  setSecureContext(options: SecureContextOptions): void {
    const command: SocketThreadCommand = { kind: 'secure-context', options };
    this.current()?.postMessage(command);
  }
}

class SocketThreadHost {
  private worker: Worker | undefined;
  private closing = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly relay = new SecureContextRelay(() => this.worker);

  constructor(
    private settings: Omit<SocketThreadSettings, 'tls'>,
    private readonly serve: (request: ForwardedRequest) => Promise<PostedAnswer>,
    private readonly logger: Logger,
    private readonly tls: TlsCredentials | undefined,
    private readonly entry: URL,
  ) {
    tls?.register(this.relay);
  }

  /** A worker listening on `port`: resolves with the port bound, rejects with the listen error. */
  start(port: number): Promise<number> {
    const { tls } = this;
    // The credentials as they are now: a worker restarted after a reload gets the reloaded files.
    const workerData: SocketThreadSettings = { ...this.settings, port, ...(tls === undefined ? {} : { tls: { serverOptions: tls.serverOptions(), clientCertificates: tls.settings.clientCertificates } }) };
    const worker = new Worker(this.entry, { workerData });
    let live = true;
    return new Promise<number>((resolve, reject) => {
      let listening = false;
      worker.on('message', (event: SocketThreadEvent) => {
        switch (event.kind) {
          case 'listening':
            listening = true;
            if (this.closing) void worker.terminate();
            else this.worker = worker;
            resolve(event.port);
            break;
          case 'listen-failed':
            reject(listenError(event.error));
            void worker.terminate();
            break;
          case 'request': {
            // The loop's work for a request is noted for the benches' stage timing: its synchronous start here, its answer's post.
            const takenAt = performance.now();
            void this.serve(event).then((answer) => {
              if (!live) return;
              const postedAt = performance.now();
              const command: SocketThreadCommand = { kind: 'answer', id: event.id, ...answer };
              worker.postMessage(command, [answer.body.buffer as ArrayBuffer]);
              noteBusy(Busy.http, postedAt, performance.now());
            });
            noteBusy(Busy.http, takenAt, performance.now());
            break;
          }
          case 'log':
            this.logger[event.level](event.fields, event.message);
            break;
          case 'closed':
            void worker.terminate();
            break;
        }
      });
      worker.on('error', (error) => {
        if (listening) this.logger.error({ err: error }, 'HTTP listener thread failed');
        else reject(error);
      });
      worker.on('exit', (exitCode) => {
        live = false;
        if (!listening) reject(new Error(`the HTTP listener thread exited (code ${exitCode}) before it listened`));
        if (this.worker !== worker) return;
        this.worker = undefined;
        if (!this.closing) this.restartLater(exitCode);
      });
    }).then((bound: number) => {
      // A restart binds the same port again, also when the first start asked for any (0).
      this.settings = { ...this.settings, port: bound };
      return bound;
    });
  }

  private restartLater(exitCode: number): void {
    const at = this.settings.port;
    this.logger.error({ exitCode, port: at, restartInMs: restartDelayMs }, 'HTTP listener thread stopped unexpectedly: starting it again');
    this.restartTimer = setTimeout(() => {
      this.start(at).then(
        () => this.logger.info({ port: at }, 'HTTP listener thread started again'),
        (error: unknown) => {
          this.logger.error({ err: error, port: at }, 'HTTP listener thread could not listen again');
          if (!this.closing) this.restartLater(exitCode);
        },
      );
    }, restartDelayMs);
  }

  /** Closes the worker's server and its connections, then terminates the worker. */
  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.restartTimer);
    this.relay.emit('close');
    const worker = this.worker;
    this.worker = undefined;
    if (worker === undefined) return;
    await new Promise<void>((resolve) => {
      worker.once('exit', () => resolve());
      const command: SocketThreadCommand = { kind: 'close' };
      worker.postMessage(command);
    });
  }
}

/** The listen error as an Error with its code, as server.listen would have rejected. */
function listenError(failure: ListenFailure): Error {
  return Object.assign(new Error(failure.message), failure.code === undefined ? {} : { code: failure.code }, failure.errno === undefined ? {} : { errno: failure.errno }, failure.syscall === undefined ? {} : { syscall: failure.syscall });
}
