/**
 * Every bound the HTTP listener enforces, as named constants with the unit
 * last, like the MQTT and AMQP listeners' (src/protocols/mqtt/limits.ts,
 * src/protocols/amqp/limits.ts). The admin
 * API serves an operator, a dashboard and a metrics scraper: a small
 * connection cap and short timeouts cost those nothing, and keep an
 * unauthenticated client from holding file descriptors the log needs
 * (issue 11: ~19,900 idle connections exhausted them) or connections open by
 * trickling bytes (slowloris). A collection query reads its documents from
 * the log in chunks and examines a bounded number of them
 * (collection-query.ts), so one query can neither hold the event loop nor
 * read a whole large collection; the log's records and traces read the log
 * the same way, within their own caps (log-records.ts). checkHttpLimits runs once, at start-up.
 */

export class HttpLimitError extends Error {
  override readonly name = 'HttpLimitError';
  readonly code = 'EHTTPLIMIT';
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new HttpLimitError(`HTTP limit: ${message}`);
}

export interface HttpLimits {
  /** Live connections (idle keep-alive ones included); the next one is closed at once. */
  readonly connectionsMax: number;
  /**
   * From a request's first byte to the end of its headers. A client sending
   * them slower (slowloris: a byte a second) gets 408 and is closed.
   */
  readonly headersTimeoutMs: number;
  /** From a request's first byte to its last. */
  readonly requestTimeoutMs: number;
  /**
   * A connection with no byte in either direction for this long is closed:
   * one that connects and never sends anything, or stops mid-request.
   */
  readonly idleTimeoutMs: number;
  /** How long a kept-alive connection may wait for its next request. */
  readonly keepAliveTimeoutMs: number;
  /** Request line and headers together; beyond it, 431 (node's maxHeaderSize). Bodies: management/request-body.ts. */
  readonly headerBytesMax: number;
  /** Documents one collection query (documents or count) reads from the log at most; past it the answer says `partial: true`. */
  readonly queryDocumentsExaminedMax: number;
  /** A query yields to the event loop after this many documents... */
  readonly queryChunkDocuments: number;
  /** ...or after this long, whichever comes first. */
  readonly queryChunkMs: number;
  /** Records GET /api/log/records examines at most (without `from`: the newest this many); past it the answer says `partial: true`. */
  readonly logRecordsExaminedMax: number;
  /** Records a trace (GET /api/log/trace) reads at most after the message; past it the answer says `partial: true`. */
  readonly traceRecordsExaminedMax: number;
  /** Both read the log in chunks of at most this many records, or queryChunkMs, whichever comes first. */
  readonly logChunkRecords: number;
}

export const defaultHttpLimits: HttpLimits = {
  connectionsMax: 256,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  headerBytesMax: 16 * 1024,
  queryDocumentsExaminedMax: 100_000,
  queryChunkDocuments: 500,
  queryChunkMs: 10,
  logRecordsExaminedMax: 50_000,
  traceRecordsExaminedMax: 1_000_000,
  logChunkRecords: 2_000,
};

export function resolveHttpLimits(overrides: Partial<HttpLimits> = {}): HttpLimits {
  const limits: HttpLimits = { ...defaultHttpLimits, ...overrides };
  checkHttpLimits(limits);
  return limits;
}

export function checkHttpLimits(limits: HttpLimits): void {
  const integerIn = (value: number, low: number, high: number): boolean => Number.isInteger(value) && value >= low && value <= high;
  check(integerIn(limits.connectionsMax, 1, Number.MAX_SAFE_INTEGER), 'connectionsMax must be a positive integer');
  check(integerIn(limits.headersTimeoutMs, 1, 3_600_000), 'headersTimeoutMs must be an integer in [1, 3600000]');
  // node refuses a headers timeout longer than the request timeout, and it would mean nothing.
  check(integerIn(limits.requestTimeoutMs, limits.headersTimeoutMs, 3_600_000), 'requestTimeoutMs must be an integer in [headersTimeoutMs, 3600000]');
  check(integerIn(limits.idleTimeoutMs, 1, 3_600_000), 'idleTimeoutMs must be an integer in [1, 3600000]');
  check(integerIn(limits.keepAliveTimeoutMs, 1, 3_600_000), 'keepAliveTimeoutMs must be an integer in [1, 3600000]');
  // A request line with a documents filter in its query string must fit.
  check(integerIn(limits.headerBytesMax, 1024, 1024 * 1024), 'headerBytesMax must be an integer in [1024, 1048576]');
  check(integerIn(limits.queryDocumentsExaminedMax, 1, Number.MAX_SAFE_INTEGER), 'queryDocumentsExaminedMax must be a positive integer');
  check(integerIn(limits.queryChunkDocuments, 1, 1_000_000), 'queryChunkDocuments must be an integer in [1, 1000000]');
  check(integerIn(limits.queryChunkMs, 1, 1000), 'queryChunkMs must be an integer in [1, 1000]');
  check(integerIn(limits.logRecordsExaminedMax, 1, Number.MAX_SAFE_INTEGER), 'logRecordsExaminedMax must be a positive integer');
  check(integerIn(limits.traceRecordsExaminedMax, 1, Number.MAX_SAFE_INTEGER), 'traceRecordsExaminedMax must be a positive integer');
  check(integerIn(limits.logChunkRecords, 1, 1_000_000), 'logChunkRecords must be an integer in [1, 1000000]');
}

/**
 * How often node looks for requests past headersTimeoutMs or requestTimeoutMs
 * (its default, 30 s, would let a 10 s headers timeout run to 40 s): a
 * quarter of the shorter one, at least 50 ms.
 */
export function timeoutCheckIntervalMs(limits: HttpLimits): number {
  return Math.max(50, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4));
}
