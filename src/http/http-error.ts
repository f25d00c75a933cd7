/**
 * The error a handler throws to answer with a status. The server turns it
 * into RabbitMQ's error body, `{"error": "...", "reason": "..."}`, where
 * `reason` is one line saying what was wrong (rabbitmqadmin prints it).
 */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    readonly error: string,
    reason: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(reason);
  }
}

export function badRequest(reason: string): HttpError {
  return new HttpError(400, 'bad_request', reason);
}

export function notFound(reason: string): HttpError {
  return new HttpError(404, 'not_found', reason);
}
