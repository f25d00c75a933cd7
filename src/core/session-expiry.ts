/**
 * MQTT 5 session expiry [MQTT-3.1.2-23]: a persistent session whose client
 * left lives for its Session Expiry Interval, then ends. Both facts are
 * records: `session offline` (when it ends) as the client leaves, `session
 * end` when it ends, so replay knows a session's end time without a clock and
 * the end happens exactly once however often the broker restarts: a restart
 * after the time finds the session still there with its time passed, and
 * writes the end then.
 *
 *   interval absent  (3.1.1 clean_session=0)  never expires
 *   interval 0                                 ends when the client leaves
 *   interval 0xFFFFFFFF                        never expires [MQTT-3.1.2-23]
 *   otherwise                                  ends `interval` s after the client left
 *
 * A session whose client was connected when the broker stopped (a crash) is
 * treated as left at the restart. Timers are unref'd: they never hold the
 * process open, and they only call expireDue(), which judges by the core's
 * clock, so an injected clock decides in tests.
 */
import { record, type Committer } from './committer.js';
import type { SessionRuntime } from './mqtt-sessions.js';

export const sessionNeverExpires = 0xffffffff;

/** setTimeout's longest delay; a later end is re-armed when this one fires. */
const timerDelayMaxMs = 2_147_483_647;

export class SessionExpiry {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly committer: Committer,
    private readonly sessions: Map<string, SessionRuntime>,
    private readonly clock: () => number,
    /** Forget a session's runtime (subscriptions, the map entry) once its end is recorded. */
    private readonly discard: (session: SessionRuntime) => void,
  ) {}

  /** The client is back (or another took the id): the session no longer runs out. */
  cancel(clientId: string): void {
    clearTimeout(this.timers.get(clientId));
    this.timers.delete(clientId);
  }

  /**
   * A persistent session's client left. `interval` overrides the session's own
   * (a v5 DISCONNECT may change it [MQTT-3.14.2.2.2]).
   */
  left(session: SessionRuntime, interval = session.state.expiryInterval): void {
    if (!session.persistent || interval === undefined || interval === sessionNeverExpires) return;
    if (interval === 0) {
      this.end(session);
      return;
    }
    const until = this.clock() + interval * 1000;
    this.committer.commitQuietly([record('session', { c: session.clientId, op: 'offline', until })]);
    this.arm(session.clientId, until);
  }

  /** At start-up: sessions connected when the broker stopped left now; every offline one gets its timer (or ends at once). */
  resumeAfterStart(): void {
    for (const session of [...this.sessions.values()]) {
      const { expiryInterval, expiresAt } = session.state;
      if (expiresAt === undefined && expiryInterval !== undefined) this.left(session);
    }
    this.expireDue();
  }

  /** End every offline session whose time has come; arm a timer for the others. */
  expireDue(): void {
    const now = this.clock();
    for (const session of [...this.sessions.values()]) {
      const expiresAt = session.state.expiresAt;
      if (expiresAt === undefined || session.link !== undefined) continue;
      if (expiresAt <= now) this.end(session);
      else this.arm(session.clientId, expiresAt);
    }
  }

  private end(session: SessionRuntime): void {
    this.cancel(session.clientId);
    this.committer.commitQuietly([record('session', { c: session.clientId, op: 'end' })]);
    this.discard(session);
  }

  private arm(clientId: string, until: number): void {
    this.cancel(clientId);
    const delay = Math.min(Math.max(0, until - this.clock()), timerDelayMaxMs);
    const timer = setTimeout(() => {
      this.timers.delete(clientId);
      this.expireDue();
    }, delay);
    timer.unref();
    this.timers.set(clientId, timer);
  }
}
