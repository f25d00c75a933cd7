/**
 * The AMQP part of `npm run bench -- fuzz`: the fuzz test's cases
 * (amqp-fuzz-cases.ts; mostly noise and sessions here, up to 400 frames a
 * connection) against a real broker in this process, until a million frames
 * have been sent, with the canary publishing and consuming beside them.
 * Prints cases/s, frames/s (frames as generated, before mutation, whether or
 * not the broker still read them after closing), the canary's round trips
 * and its slowest one, and, on the first failure, the run seed and the
 * case's own seed: case i is
 * fc.sample(amqpFuzzCase(benchMix), { seed: runSeed + i, numRuns: 1 })[0].
 *
 * CAIRN_FUZZ_SEED picks the run seed, CAIRN_FUZZ_FRAMES the frame count.
 * Cases run `concurrentConnections` at a time, so a warn/error log line is
 * blamed on the cases in flight when it was seen. */
import fc from 'fast-check';
import { amqpFuzzCase, type FuzzCase, type FuzzMix } from './amqp-fuzz-cases.js';
import { runFuzzCase } from './amqp-fuzz-client.js';
import { AmqpCanary, startFuzzBroker, type FuzzBroker } from './amqp-fuzz-harness.js';

/** Mostly long noise: a million frames in a few thousand connections, the handshakes no longer the bulk of the work. */
const benchMix: FuzzMix = { noiseFramesMax: 400, noiseWeight: 45, sessionWeight: 45 };
const concurrentConnections = 8;

export interface AmqpFuzzOptions {
  readonly frames?: number;
  readonly seed?: number;
}

export interface AmqpFuzzReport {
  readonly cases: number;
  readonly frames: number;
  readonly seconds: number;
  /** The first failure, with what replays it; undefined when there was none. */
  readonly failure: string | undefined;
}

interface InFlight {
  readonly index: number;
  readonly fuzzCase: FuzzCase;
}

export async function runAmqpFuzz(options: AmqpFuzzOptions = {}): Promise<AmqpFuzzReport> {
  const frameTarget = options.frames ?? numberFromEnvironment('CAIRN_FUZZ_FRAMES') ?? 1_000_000;
  const runSeed = options.seed ?? numberFromEnvironment('CAIRN_FUZZ_SEED') ?? Math.floor(Math.random() * 2 ** 31);
  console.log(`AMQP fuzz: ${frameTarget.toLocaleString('en-US')} frames, ${concurrentConnections} connections at a time, seed ${runSeed} (CAIRN_FUZZ_SEED=${runSeed} replays the run)`);
  const broker = await startFuzzBroker();
  const canary = await AmqpCanary.start(broker.port, 'fuzz.canary');
  const arbitrary = amqpFuzzCase(benchMix);
  const baseline = broker.connections();
  const inFlight = new Set<InFlight>();
  let nextIndex = 0;
  let cases = 0;
  let frames = 0;
  let failure: string | undefined;
  const started = performance.now();

  const describeCase = ({ index, fuzzCase }: InFlight): string => `case ${index} (seed ${caseSeed(runSeed, index)}): ${fuzzCase.context}: ${fuzzCase.label}`;
  const worker = async (): Promise<void> => {
    while (failure === undefined && frames < frameTarget) {
      const index = nextIndex++;
      const entry: InFlight = { index, fuzzCase: fc.sample(arbitrary, { seed: caseSeed(runSeed, index), numRuns: 1 })[0]! };
      frames += entry.fuzzCase.frameCount;
      inFlight.add(entry);
      const problemsBefore = broker.problems().length;
      const result = await runFuzzCase(broker.port, entry.fuzzCase).catch((error: unknown) => ({ violation: `the client failed: ${String(error)}`, closeCodes: [] }));
      const problems = broker.problems().slice(problemsBefore);
      if (problems.length > 0) failure ??= `${problems.join('\n')}\n  while in flight: ${[...inFlight].map(describeCase).join('; ')}`;
      if (result.violation !== undefined) failure ??= `${describeCase(entry)}: ${result.violation}`;
      if (canary.failures.length > 0) failure ??= `canary: ${canary.failures.join('; ')} (after ${describeCase(entry)})`;
      inFlight.delete(entry);
      cases++;
    }
  };
  await Promise.all(Array.from({ length: concurrentConnections }, worker));
  const seconds = (performance.now() - started) / 1000;
  failure ??= await connectionsForgotten(broker, baseline);
  await canary.roundTrip().catch((error: unknown) => {
    failure ??= `canary after the run: ${String(error)}`;
  });
  await canary.stop();
  const mismatches = await broker.durableMismatches();
  if (mismatches.length > 0) failure ??= `after the run: ${mismatches.join('; ')}`;
  await broker.close();

  console.log(`AMQP fuzz: ${cases.toLocaleString('en-US')} cases, ${frames.toLocaleString('en-US')} frames in ${seconds.toFixed(1)} s: ${Math.round(cases / seconds).toLocaleString('en-US')} cases/s, ${Math.round(frames / seconds).toLocaleString('en-US')} frames/s`);
  console.log(`AMQP fuzz canary: ${canary.roundTrips.toLocaleString('en-US')} publish→confirm→deliver round trips, slowest ${canary.slowestRoundTripMs.toFixed(1)} ms`);
  console.log(failure === undefined ? 'AMQP fuzz: no failure' : `AMQP fuzz FAILED (run seed ${runSeed}): ${failure}`);
  if (failure !== undefined) process.exitCode = 1;
  return { cases, frames, seconds, failure };
}

function caseSeed(runSeed: number, index: number): number {
  return (runSeed + index) | 0;
}

async function connectionsForgotten(broker: FuzzBroker, baseline: number): Promise<string | undefined> {
  const deadline = Date.now() + 10_000;
  while (broker.connections() !== baseline) {
    if (Date.now() > deadline) return `${broker.connections() - baseline} fuzz connection(s) still open 10 s after the run`;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return undefined;
}

function numberFromEnvironment(name: string): number | undefined {
  const value = process.env[name];
  if (value === undefined || value === '') return undefined;
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed < 0) throw new Error(`${name} must be a non-negative integer, got '${value}'`);
  return parsed;
}
