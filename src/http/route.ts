/**
 * The shapes of the HTTP listener's route table: a path pattern whose groups
 * are the (percent-decoded) parameters, and one handler per method. Handlers
 * return an Answer; errors are thrown (HttpError) and answered in one place.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { AnswerBytes, AnswerBytesPool } from './answer-bytes.js';
import type { JsonObject } from './management/request-body.js';

export type Method = 'GET' | 'PUT' | 'POST' | 'DELETE';

export interface RequestContext {
  readonly url: URL;
  readonly parameters: readonly string[];
  readonly headers: IncomingHttpHeaders;
  /** The authenticated user; undefined when the API is open (no users configured). */
  readonly user: string | undefined;
  /** The request body as a JSON object ({} when empty); 400 when it is not one. */
  body(): Promise<JsonObject>;
}

export interface Answer {
  readonly status?: number;
  readonly contentType?: string;
  /** Text, or bytes already encoded (answer-bytes.ts). */
  readonly body: string | Buffer;
  readonly headers?: Readonly<Record<string, string>>;
  /** Called once the body's bytes have been read (true: copied for the socket thread, or gzipped) or never will be (false): a pooled buffer goes back. */
  readonly sent?: (reusable: boolean) => void;
  /** The same request gets the same answer for this many ms more (PostedAnswer.keepForMs): the socket thread gives it again. */
  readonly keepForMs?: number;
}

export type Handler = (context: RequestContext) => Answer | Promise<Answer>;

export interface Route {
  readonly pattern: RegExp;
  readonly methods: Partial<Record<Method, Handler>>;
}

export function json(body: unknown, status = 200, headers: Readonly<Record<string, string>> = {}): Answer {
  return { status, contentType: jsonContentType, body: `${JSON.stringify(body)}\n`, headers };
}

export const jsonContentType = 'application/json; charset=utf-8';

/** An answer written into a pooled buffer, given back once sent. */
export function pooledAnswer(out: AnswerBytes, pool: AnswerBytesPool, contentType: string): Answer {
  return { contentType, body: out.view(), sent: (reusable) => { if (reusable) pool.giveBack(out); } };
}

export function noContent(status = 204, headers: Readonly<Record<string, string>> = {}): Answer {
  return { status, body: '', headers };
}

/** A path segment matcher: the parameters are decoded by the server. */
export const segment = '([^/]+)';

export function path(...parts: string[]): RegExp {
  return new RegExp(`^${parts.join('/')}$`);
}
