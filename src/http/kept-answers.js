// @ts-check
/**
 * Answers the HTTP listener's socket thread (socket-thread.js) gives again
 * itself, without the broker's thread: a metrics exposition is the same bytes
 * for a whole stats interval (kept-exposition.ts), so a scrape within it need
 * not wake the event loop at all (issue 15: each forwarded request costs the
 * loop a thread wake-up and the socket thread a second one for the answer).
 * The broker's thread marks such an answer with how long it stays the same
 * (PostedAnswer.keepForMs); it is given again only to a request for the same
 * target with the same Accept-Encoding and Authorization values, byte for
 * byte, so content negotiation and authentication are what the broker's
 * thread decided for that request. Entries are keyed by a SHA-256 digest of
 * those values (no credentials are kept), expire on this thread's monotonic
 * clock, and at most `entriesMax` are kept, the oldest dropped first.
 *
 * Plain JavaScript for the same reason as socket-thread.js, copied into dist
 * by tools/copy-plain-files.mjs.
 */
import { createHash } from 'node:crypto';

/** @typedef {{ readonly status: number, readonly headers: Readonly<Record<string, string | number>>, readonly body: Buffer }} KeptAnswer */

/** Enough for each exposition in a few encodings and credentials; each entry holds at most one answer's bytes. */
export const keptAnswersMax = 8;

/**
 * The key of a GET: its target and the two request headers the answer depends on. A header given twice arrives as
 * an array and is kept out (undefined), as are other methods.
 * @param {string | undefined} method @param {string | undefined} url @param {import('node:http').IncomingHttpHeaders} headers
 * @returns {string | undefined}
 */
export function keptAnswerKey(method, url, headers) {
  if (method !== 'GET' || url === undefined) return undefined;
  const encoding = headers['accept-encoding'] ?? '';
  const authorization = headers.authorization ?? '';
  if (typeof encoding !== 'string') return undefined;
  return createHash('sha256').update(url).update('\0').update(encoding).update('\0').update(authorization).digest('base64');
}

export class KeptAnswers {
  /** @type {Map<string, { readonly until: number, readonly answer: KeptAnswer }>} */
  #entries = new Map();
  #now;
  #entriesMax;

  /** @param {() => number} now a monotonic clock in ms @param {number} entriesMax */
  constructor(now = () => performance.now(), entriesMax = keptAnswersMax) {
    this.#now = now;
    this.#entriesMax = entriesMax;
  }

  /** The answer kept for `key` while it is fresh. @param {string} key @returns {KeptAnswer | undefined} */
  get(key) {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (this.#now() < entry.until) return entry.answer;
    this.#entries.delete(key);
    return undefined;
  }

  /** Keeps `answer` for `key` for `forMs` ms. @param {string} key @param {KeptAnswer} answer @param {number} forMs */
  keep(key, answer, forMs) {
    if (!(forMs > 0)) return;
    const now = this.#now();
    this.#entries.delete(key);
    for (const [other, entry] of this.#entries) if (entry.until <= now) this.#entries.delete(other);
    this.#entries.set(key, { until: now + forMs, answer });
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.#entriesMax) break;
      this.#entries.delete(oldest);
    }
  }

  get size() {
    return this.#entries.size;
  }
}
