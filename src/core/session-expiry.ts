/**
 * What happens to a persistent session while its client is away: MQTT 5
 * session expiry [MQTT-3.1.2-23] and the delayed will [MQTT-3.1.3-9]. A
 * session whose client left lives for its Session Expiry Interval, then ends;
 * its will, with a Will Delay Interval, is published when the delay passes or
 * the session ends, whichever is first, and never if the client comes back
 * before. Every one of these facts is a record, so replay knows them without a
 * clock and each happens exactly once however often the broker restarts:
 *
 *   client leaves         session offline {until?, w?}   (nothing for 3.1.1 / never-expiring without a will)
 *   will delay passes     the will's publish records, then session offline {until?} without w, in one commit
 *   session expires       (the will's publish records, if still pending), then session end, in one commit
 *   client comes back     session open: the end time and the will are gone
 *   a Clean Start ends it  session end/open, then the pending will's publish records (mqtt-core connect)
 *
 *   interval absent  (3.1.1 clean_session=0)  never expires
 *   interval 0                                 ends when the client leaves
 *   interval 0xFFFFFFFF                        never expires [MQTT-3.1.2-23]
 *   otherwise                                  ends `interval` s after the client left
 *
 * A restart past a time finds the session (or will) still there with its time
 * passed and acts then. A session whose client was connected when the broker
 * stopped (a crash) is treated as left at the restart; its will is lost with
 * the connection, as every will of a crashed broker. Timers are the broker's
 * (timers.ts: unref'd in production, a manual clock in tests) and only call
 * expireDue(), which judges by the core's clock.
 */
import type { PendingWill } from '../projections/state.js';
import type { SessionBody } from '../projections/records.js';
import type { Durable, MqttWill } from './api.js';
import { record, type Committer } from './committer.js';
import { outgoingPropertiesOf, storedPropertiesOf } from './mqtt-message-properties.js';
import type { SessionRuntime } from './mqtt-sessions.js';
import type { Timers } from './timers.js';
import { willBody } from '../projections/pending-will.js';

export const sessionNeverExpires = 0xffffffff;

/** setTimeout's longest delay; a later deadline is re-armed when this one fires. */
const timerDelayMaxMs = 2_147_483_647;

/** Publishes a will and appends `then` (the session record that says so) in the same commit. */
export type WillPublisher = (clientId: string, will: MqttWill, then: SessionBody | undefined) => Durable;

export class SessionExpiry {
  private readonly timers = new Map<string, unknown>();

  constructor(
    private readonly committer: Committer,
    private readonly sessions: Map<string, SessionRuntime>,
    private readonly clock: () => number,
    private readonly scheduler: Timers,
    /** Forget a session's runtime (subscriptions, the map entry) once its end is recorded. */
    private readonly discard: (session: SessionRuntime) => void,
    private readonly publishWill: WillPublisher,
  ) {}

  /** The client is back (or another took the id): the session no longer runs out, its will waits no more. */
  cancel(clientId: string): void {
    const timer = this.timers.get(clientId);
    if (timer !== undefined) this.scheduler.clear(timer);
    this.timers.delete(clientId);
  }

  /**
   * A persistent session's client left. `interval` overrides the session's own
   * (a v5 DISCONNECT may change it [MQTT-3.14.2.2.2]); `will` is the
   * connection's will, if it is to be published. Returns the durability of a
   * will published now.
   */
  left(session: SessionRuntime, interval = session.state.expiryInterval, will?: MqttWill): Durable {
    const delay = will?.delayInterval ?? 0;
    if (interval === 0) return this.end(session, will);
    const now = this.clock();
    const until = interval === undefined || interval === sessionNeverExpires ? undefined : now + interval * 1000;
    // A delay past the session's end is cut to it: the will goes with the end [MQTT-3.1.3-9].
    const pending = will !== undefined && delay > 0 ? pendingWill(will, now + delay * 1000) : undefined;
    const durable = will !== undefined && pending === undefined ? this.publishWill(session.clientId, will, undefined) : undefined;
    if (until === undefined && pending === undefined) return durable;
    this.committer.commitQuietly([record('session', offlineBody(session.clientId, until, pending))]);
    this.arm(session.clientId, Math.min(until ?? Infinity, pending?.at ?? Infinity));
    return durable;
  }

  /** At start-up: sessions connected when the broker stopped left now; every offline one gets its timer (or acts at once). */
  resumeAfterStart(): void {
    for (const session of [...this.sessions.values()]) {
      const { expiryInterval, expiresAt, will } = session.state;
      if (expiresAt === undefined && will === undefined && expiryInterval !== undefined) this.left(session);
    }
    this.expireDue();
  }

  /** Publish every delayed will and end every offline session whose time has come; arm a timer for the others. */
  expireDue(): void {
    const now = this.clock();
    for (const session of [...this.sessions.values()]) {
      if (session.link !== undefined) continue;
      const { expiresAt, will } = session.state;
      if (expiresAt === undefined && will === undefined) continue;
      const ends = expiresAt !== undefined && expiresAt <= now;
      if (ends) {
        this.end(session, will === undefined ? undefined : willOf(will));
        continue;
      }
      if (will !== undefined && will.at <= now) {
        this.publishDelayed(session.clientId, willOf(will), offlineBody(session.clientId, expiresAt, undefined));
        if (expiresAt === undefined) continue;
      }
      this.arm(session.clientId, Math.min(expiresAt ?? Infinity, will !== undefined && will.at > now ? will.at : Infinity));
    }
  }

  /** The session ends now; its will, if any, is published in the same commit as the end. */
  private end(session: SessionRuntime, will: MqttWill | undefined): Durable {
    this.cancel(session.clientId);
    const endBody: SessionBody = { c: session.clientId, op: 'end' };
    let durable: Durable;
    if (will === undefined) this.committer.commitQuietly([record('session', endBody)]);
    else durable = this.publishDelayed(session.clientId, will, endBody);
    this.discard(session);
    return durable;
  }

  /** A will published by a deadline rather than by a connection: nobody waits for it, a failure is the log's to report. */
  private publishDelayed(clientId: string, will: MqttWill, then: SessionBody): Durable {
    const durable = this.publishWill(clientId, will, then);
    durable?.catch(() => undefined);
    return durable;
  }

  private arm(clientId: string, at: number): void {
    this.cancel(clientId);
    const delay = Math.min(Math.max(0, at - this.clock()), timerDelayMaxMs);
    const timer = this.scheduler.set(() => {
      this.timers.delete(clientId);
      this.expireDue();
    }, delay);
    this.timers.set(clientId, timer);
  }
}

function offlineBody(clientId: string, until: number | undefined, will: PendingWill | undefined): SessionBody {
  return { c: clientId, op: 'offline', ...(until === undefined ? {} : { until }), ...(will === undefined ? {} : { w: willBody(will) }) };
}

/** A will as the session keeps it while it waits: its properties as a message's, its expiry interval apart (it counts from the publication). */
function pendingWill(will: MqttWill, at: number): PendingWill {
  const { messageExpiryInterval, ...rest } = will.properties ?? {};
  const properties = storedPropertiesOf(rest, at);
  return {
    topic: will.topic, payload: will.payload, qos: will.qos, retain: will.retain, at,
    ...(properties === undefined ? {} : { properties }),
    ...(messageExpiryInterval === undefined ? {} : { messageExpiryInterval }),
  };
}

/** The will to publish from what the session kept. */
export function willOf(will: PendingWill): MqttWill {
  const properties = {
    ...outgoingPropertiesOf(will.properties, 0),
    ...(will.messageExpiryInterval === undefined ? {} : { messageExpiryInterval: will.messageExpiryInterval }),
  };
  return { topic: will.topic, payload: will.payload, qos: will.qos, retain: will.retain, ...(Object.keys(properties).length > 0 ? { properties } : {}) };
}
