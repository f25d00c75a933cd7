/**
 * Comparing brokers on a shared machine whose disk and CPU drift from minute
 * to minute (this one's fdatasync p50 swings between ~0.15 and ~1.5 ms): every
 * case runs on every broker in alternation, after the same unmeasured warm-up
 * (a JIT-compiled broker and the JavaScript client are still warming up in
 * their first thousand operations). Used by bench-mqtt.ts and bench-amqp.ts.
 */

const caseTimeoutMs = 60_000;
/** Throughput: one unmeasured run per broker, then the median of this many alternating runs. */
export const throughputRuns = 3;
/** Latency samples are taken in this many slices, brokers alternating. */
export const latencySlices = 5;

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export interface LatencySummary { readonly p50: number; readonly p99: number; readonly count: number }

export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), count: sorted.length };
}

export function withTimeout<T>(promise: Promise<T>, label: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${label}: timed out after ${caseTimeoutMs} ms`)), caseTimeoutMs); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A sequential round trip kept open across slices: opening warms it up, `sample` measures, `close` cleans up. */
export interface RoundTripCase {
  sample(count: number): Promise<number[]>;
  close(): Promise<void>;
}

/** Where timeRoundTrips also hands each round trip's start and end (performance.now() ms), when set: tail-trace.ts's join. */
let roundTripRecorder: ((startedMs: number, endedMs: number) => void) | undefined;

export function recordRoundTrips(recorder: ((startedMs: number, endedMs: number) => void) | undefined): void {
  roundTripRecorder = recorder;
}

/** Times `count` sequential round trips, in ms. */
export async function timeRoundTrips(count: number, roundTrip: () => Promise<void>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await roundTrip();
    const ended = performance.now();
    samples.push(ended - started);
    roundTripRecorder?.(started, ended);
  }
  return samples;
}

/** Runs `run` on every broker: one unmeasured round, then `throughputRuns` alternating rounds; each broker's median. */
export async function medianRuns<B, T extends number | { rate: number }>(label: string, brokers: readonly B[], run: (broker: B) => Promise<T>): Promise<T[]> {
  for (const broker of brokers) await withTimeout(run(broker), `${label} (warm-up)`);
  const results: T[][] = brokers.map(() => []);
  for (let round = 0; round < throughputRuns; round++) {
    for (const [i, broker] of brokers.entries()) results[i]!.push(await withTimeout(run(broker), label));
  }
  const rateOf = (r: T): number => (typeof r === 'number' ? r : r.rate);
  return results.map((runs) => runs.sort((a, b) => rateOf(a) - rateOf(b))[Math.floor(runs.length / 2)]!);
}

/** Opens (and so warms up) the case on every broker, then takes `count` samples each in alternating slices. */
export function interleavedLatency<B>(label: string, brokers: readonly B[], count: number, open: (broker: B) => Promise<RoundTripCase>): Promise<LatencySummary[]> {
  return interleavedCases(label, brokers.map((broker) => () => open(broker)), count);
}

/**
 * Opens (and so warms up) every case in turn, then takes `count` samples of each in alternating
 * slices: figures meant to be compared with each other (a disk's own latency, a broker's round trip
 * with and without that disk) then see the same minutes of the machine's drift.
 */
export async function interleavedCases(label: string, openers: readonly (() => Promise<RoundTripCase>)[], count: number): Promise<LatencySummary[]> {
  const cases: RoundTripCase[] = [];
  try {
    for (const open of openers) cases.push(await withTimeout(open(), `${label} (warm-up)`));
    const samples: number[][] = cases.map(() => []);
    for (let slice = 0; slice < latencySlices; slice++) {
      for (const [i, c] of cases.entries()) samples[i]!.push(...(await withTimeout(c.sample(Math.ceil(count / latencySlices)), label)));
    }
    return samples.map(summarize);
  } finally {
    for (const c of cases) await c.close();
  }
}
