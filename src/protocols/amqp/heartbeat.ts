/**
 * Heartbeats for one connection (spec 4.2.7), both ways, without reading the
 * clock: a timer ticks twice per negotiated interval.
 *   - out: on a tick with nothing written since the last one, send a
 *     heartbeat frame, so the client hears from us at least once per interval;
 *   - in: a client from which nothing arrived for two whole intervals (four
 *     silent ticks) is gone, as RabbitMQ judges it; the connection is dropped.
 * While the connection is not reading (back-pressure) the client's frames
 * wait in the kernel, so silence then is excused.
 */

/** Timer ticks per negotiated interval. */
const ticksPerInterval = 2;
/** Intervals of silence after which the client counts as dead. */
const silentIntervalsMax = 2;

export interface HeartbeatPeer {
  sendHeartbeat(): void;
  /** True while silence from the client is not its fault (we stopped reading). */
  silenceExcused(): boolean;
  /** The client missed two intervals. */
  dead(): void;
}

export class Heartbeat {
  private timer: NodeJS.Timeout | undefined;
  private receivedSinceTick = false;
  private wroteSinceTick = false;
  private silentTicks = 0;

  /** `seconds` 0 (negotiated off) makes a heartbeat that never fires. */
  constructor(readonly seconds: number, private readonly peer: HeartbeatPeer) {
    if (seconds === 0) return;
    this.timer = setInterval(() => this.tick(), (seconds * 1000) / ticksPerInterval);
    this.timer.unref();
  }

  received(): void {
    this.receivedSinceTick = true;
  }

  wrote(): void {
    this.wroteSinceTick = true;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private tick(): void {
    if (!this.wroteSinceTick) this.peer.sendHeartbeat();
    this.wroteSinceTick = false;
    this.silentTicks = this.receivedSinceTick || this.peer.silenceExcused() ? 0 : this.silentTicks + 1;
    this.receivedSinceTick = false;
    if (this.silentTicks >= silentIntervalsMax * ticksPerInterval) {
      this.stop();
      this.peer.dead();
    }
  }
}
