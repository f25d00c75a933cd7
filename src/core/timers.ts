/**
 * The broker's timers, injectable beside its clock (BrokerOptions.clock): what
 * expires messages at the head of a queue and deletes unused queues
 * (x-message-ttl, expiration, x-expires). Tests pass a manual clock whose
 * timers fire when the test moves time forward, so nothing sleeps.
 */
export interface Timers {
  /** Calls `callback` after about `delayMs` of the broker's clock. */
  set(callback: () => void, delayMs: number): unknown;
  clear(handle: unknown): void;
}

/** Node's timers, unref'd: a pending expiry never keeps a process alive. */
export const systemTimers: Timers = {
  set: (callback, delayMs) => setTimeout(callback, Math.max(0, delayMs)).unref(),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
