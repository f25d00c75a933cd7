/**
 * The messages between the HTTP listener's socket thread (socket-thread.js,
 * a worker that owns the listening socket and every connection) and the
 * broker's thread (socket-thread-host.ts, which routes, authenticates and
 * renders). Types only: the worker is plain JavaScript and checks itself
 * against these through JSDoc imports, so both sides read one definition.
 *
 * One request is one message each way: the worker sends the request once its
 * body is read whole (and within requestBodyBytesMax), the broker's thread
 * answers once, with the whole body.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { TlsOptions } from 'node:tls';

/** What the worker is started with (its workerData). */
export interface SocketThreadSettings {
  readonly host: string;
  readonly port: number;
  readonly connectionsMax: number;
  readonly headerBytesMax: number;
  readonly requestTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /** How often node looks for requests past their timeouts (limits.ts: timeoutCheckIntervalMs). */
  readonly timeoutCheckIntervalMs: number;
  /** Beyond this a request is answered 413 by the worker and never forwarded (management/request-body.ts). */
  readonly requestBodyBytesMax: number;
  /** HTTPS: TlsCredentials.serverOptions() (plain data) and the client-certificate mode its `admits` reads. */
  readonly tls?: {
    readonly serverOptions: TlsOptions;
    readonly clientCertificates: 'none' | 'optional' | 'required';
  };
}

/** A request read whole by the worker. */
export interface ForwardedRequest {
  readonly id: number;
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  /** Its own ArrayBuffer, transferred. */
  readonly body: Uint8Array;
}

/** The answer to one ForwardedRequest: written by the worker as it is. */
export interface PostedAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | number>>;
  /** Its own ArrayBuffer, transferred (empty for HEAD). */
  readonly body: Uint8Array;
  /**
   * The same GET (target, Accept-Encoding, Authorization) gets these bytes for this many ms more: the worker answers it
   * itself meanwhile (kept-answers.js). Only where the answer cannot change within that time.
   */
  readonly keepForMs?: number;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Worker to broker. */
export type SocketThreadEvent =
  | { readonly kind: 'listening'; readonly port: number }
  | { readonly kind: 'listen-failed'; readonly error: ListenFailure }
  | ({ readonly kind: 'request' } & ForwardedRequest)
  | { readonly kind: 'log'; readonly level: LogLevel; readonly fields: Readonly<Record<string, unknown>>; readonly message: string }
  | { readonly kind: 'closed' };

/** Broker to worker. */
export type SocketThreadCommand =
  | ({ readonly kind: 'answer'; readonly id: number } & PostedAnswer)
  | { readonly kind: 'secure-context'; readonly options: TlsOptions }
  | { readonly kind: 'close' };

/** A listen error's fields (an Error does not cross threads with its `code`). */
export interface ListenFailure {
  readonly message: string;
  readonly code?: string;
  readonly errno?: number;
  readonly syscall?: string;
}
