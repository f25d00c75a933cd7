/**
 * Message and record rates for the overview: a ring of samples of the metrics
 * totals and the log position, one per `rateSampleMs`; a rate is the change
 * between the oldest kept sample and now, divided by the time between them.
 * The clock is injected so tests can drive it.
 */
import type { Metrics, MetricsProtocol } from '../metrics.js';

export const rateSampleMs = 1_000;
/** Samples kept: the rate window is at most this many sample periods. */
export const rateSamplesMax = 10;

interface Sample {
  readonly at: number;
  readonly messagesIn: Readonly<Record<MetricsProtocol, number>>;
  readonly messagesOut: Readonly<Record<MetricsProtocol, number>>;
  readonly nextLsn: number;
}

export interface Rates {
  readonly windowSeconds: number;
  readonly messagesInPerSecond: Readonly<Record<MetricsProtocol, number>>;
  readonly messagesOutPerSecond: Readonly<Record<MetricsProtocol, number>>;
  readonly recordsPerSecond: number;
}

export class RateSampler {
  private readonly samples: Sample[] = [];

  constructor(
    private readonly metrics: Metrics,
    private readonly nextLsn: () => number,
    private readonly clock: () => number,
  ) {
    this.sample();
  }

  sample(): void {
    this.samples.push(this.current());
    if (this.samples.length > rateSamplesMax) this.samples.shift();
  }

  rates(): Rates {
    const now = this.current();
    const oldest = this.samples[0] ?? now;
    const seconds = (now.at - oldest.at) / 1000;
    const per = (delta: number): number => (seconds > 0 ? Math.round((delta / seconds) * 100) / 100 : 0);
    return {
      windowSeconds: seconds,
      messagesInPerSecond: { mqtt: per(now.messagesIn.mqtt - oldest.messagesIn.mqtt), amqp: per(now.messagesIn.amqp - oldest.messagesIn.amqp) },
      messagesOutPerSecond: { mqtt: per(now.messagesOut.mqtt - oldest.messagesOut.mqtt), amqp: per(now.messagesOut.amqp - oldest.messagesOut.amqp) },
      recordsPerSecond: per(now.nextLsn - oldest.nextLsn),
    };
  }

  private current(): Sample {
    const totals = this.metrics.totals();
    return { at: this.clock(), messagesIn: totals.messagesIn, messagesOut: totals.messagesOut, nextLsn: this.nextLsn() };
  }
}
