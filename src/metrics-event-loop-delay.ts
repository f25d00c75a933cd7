/**
 * prom-client's nodejs_eventloop_lag_* gauges (same names, help, type and
 * meaning) from a sampler of Cairn's own. prom-client reads Node's
 * monitorEventLoopDelay, an HdrHistogram over 1 µs .. 2^63 ns with 3
 * significant figures: ~46,000 buckets, and its mean, stddev and three
 * percentiles walk them five times per read — 3.7 million instructions of the
 * event loop per scrape (callgrind, 27% of the loop's work in a scrape round
 * over 1,000 queues, issue 15), for the ~10 samples a second holds.
 *
 * What is recorded is what Node's monitor records: the time between two ticks
 * of a timer that repeats every `resolutionMs` (the resolution plus the delay
 * the loop added), in nanoseconds. A read reports the samples since the last
 * read and starts afresh (prom-client resets its histogram after each read).
 * Percentiles are exact nearest-rank values of the samples (the histogram's
 * were rounded to 3 significant figures).
 */
import { Gauge, type Registry } from 'prom-client';

/** One read's statistics, in nanoseconds. */
export interface DelayFigures {
  readonly min: number;
  readonly max: number;
  readonly mean: number;
  readonly stddev: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
}

/**
 * Samples kept for the percentiles between two reads (about 7 minutes at one sample per 100 ms). Past it, every other
 * kept sample is dropped and only every other new one kept (and so on): the kept ones stay spread evenly over the
 * time since the last read. min, max, mean and stddev always count every sample.
 */
export const keptSamplesMax = 4096;

/** Sample statistics between reads: min, max, mean and variance over every sample (Welford), percentiles over kept ones. */
export class DelaySamples {
  private readonly kept = new Float64Array(keptSamplesMax);
  private keptCount = 0;
  /** One sample in `stride` is kept. */
  private stride = 1;
  private count = 0;
  private min = Number.POSITIVE_INFINITY;
  private max = 0;
  private mean = 0;
  private squaredDeviations = 0;

  record(ns: number): void {
    if (this.count % this.stride === 0) {
      if (this.keptCount === keptSamplesMax) this.thin();
      if (this.count % this.stride === 0) this.kept[this.keptCount++] = ns;
    }
    this.count++;
    this.min = Math.min(this.min, ns);
    this.max = Math.max(this.max, ns);
    const deviation = ns - this.mean;
    this.mean += deviation / this.count;
    this.squaredDeviations += deviation * (ns - this.mean);
  }

  /** The statistics since the last take (undefined when there was no sample), and a fresh start. */
  take(): DelayFigures | undefined {
    if (this.count === 0) return undefined;
    const sorted = this.kept.slice(0, this.keptCount).sort();
    // HdrHistogram's rank: the value at or below which round(p% of the samples) fall, at least the first.
    const percentile = (p: number): number => sorted[Math.min(sorted.length, Math.max(1, Math.round((p / 100) * sorted.length))) - 1]!;
    const figures = {
      min: this.min, max: this.max, mean: this.mean,
      // Population standard deviation, as HdrHistogram's.
      stddev: Math.sqrt(this.squaredDeviations / this.count),
      p50: percentile(50), p90: percentile(90), p99: percentile(99),
    };
    this.keptCount = 0;
    this.stride = 1;
    this.count = 0;
    this.min = Number.POSITIVE_INFINITY;
    this.max = 0;
    this.mean = 0;
    this.squaredDeviations = 0;
    return figures;
  }

  private thin(): void {
    for (let i = 0; i < keptSamplesMax / 2; i++) this.kept[i] = this.kept[2 * i]!;
    this.keptCount = keptSamplesMax / 2;
    this.stride *= 2;
  }
}

/**
 * Registers nodejs_eventloop_lag_seconds and nodejs_eventloop_lag_{min,max,mean,stddev,p50,p90,p99}_seconds on
 * `registry`, as prom-client's collectDefaultMetrics does (metrics/eventLoopLag.js), fed by a timer of
 * `resolutionMs` that does not keep the process alive.
 */
export function registerEventLoopDelayGauges(registry: Registry, resolutionMs: number): void {
  const samples = new DelaySamples();
  let previousTick: number | undefined;
  setInterval(() => {
    const now = performance.now();
    if (previousTick !== undefined) samples.record((now - previousTick) * 1e6);
    previousTick = now;
  }, resolutionMs).unref();
  const registers = [registry];
  const gauge = (suffix: string, help: string, aggregator: 'min' | 'max' | 'average'): Gauge => new Gauge({ name: `nodejs_eventloop_lag_${suffix}seconds`, help, registers, aggregator });
  // Registered before the others (prom-client's order), and its collect sets every one of them.
  const lag = new Gauge({
    name: 'nodejs_eventloop_lag_seconds', help: 'Lag of event loop in seconds.', registers, aggregator: 'average',
    collect() {
      // As prom-client: the time to the next turn, reported by the following read.
      const start = process.hrtime();
      setImmediate(() => {
        const [seconds, nanoseconds] = process.hrtime(start);
        lag.set(seconds + nanoseconds / 1e9);
      });
      const figures = samples.take();
      if (figures === undefined) return;
      for (const [key, target] of statistics) target.set(figures[key] / 1e9);
    },
  });
  const statistics: ReadonlyArray<readonly [keyof DelayFigures, Gauge]> = [
    ['min', gauge('min_', 'The minimum recorded event loop delay.', 'min')],
    ['max', gauge('max_', 'The maximum recorded event loop delay.', 'max')],
    ['mean', gauge('mean_', 'The mean of the recorded event loop delays.', 'average')],
    ['stddev', gauge('stddev_', 'The standard deviation of the recorded event loop delays.', 'average')],
    ['p50', gauge('p50_', 'The 50th percentile of the recorded event loop delays.', 'average')],
    ['p90', gauge('p90_', 'The 90th percentile of the recorded event loop delays.', 'average')],
    ['p99', gauge('p99_', 'The 99th percentile of the recorded event loop delays.', 'average')],
  ];
}
