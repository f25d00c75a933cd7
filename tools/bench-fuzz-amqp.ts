/**
 * The AMQP part of `npm run bench -- fuzz`: the fuzz test's cases
 * (amqp-fuzz-cases.ts; mostly noise and sessions here, up to 400 frames a
 * connection) against a real broker in this process, until a million frames
 * have been sent, with the canary publishing and consuming beside them.
 * Prints cases/s, frames/s (frames as generated, before mutation, whether or
 * not the broker still read them after closing), the canary's round trips
 * and its slowest one, and each failure with its case's own seed: case i
 * is fc.sample(amqpFuzzCase(benchMix), { seed: (runSeed + i) % 2^31,
 * numRuns: 1 })[0], and CAIRN_FUZZ_CASE=amqp:<seed> replays it alone
 * (bench-fuzz.ts). Cases run `concurrentConnections` at a time, so a
 * warn/error log line is blamed on the cases in flight when it was seen. */
import fc from 'fast-check';
import { amqpFuzzCase, type FuzzCase, type FuzzMix } from './amqp-fuzz-cases.js';
import { runFuzzCase } from './amqp-fuzz-client.js';
import { AmqpCanary, startFuzzBroker, type FuzzBroker } from './amqp-fuzz-harness.js';
import type { FuzzFailure, FuzzReport, FuzzRunOptions } from './bench-fuzz.js';

/** Mostly long noise and sessions: a million frames in a few thousand connections, the handshakes no longer the bulk of the work. */
const benchMix: FuzzMix = { noiseFramesMax: 400, noiseWeight: 45, sessionWeight: 45 };
const concurrentConnections = 8;
/** Stop a run after this many failures: the seeds are what matters, not their count. */
const failuresMax = 20;
const arbitrary = amqpFuzzCase(benchMix);

function caseFromSeed(caseSeed: number): FuzzCase {
  return fc.sample(arbitrary, { seed: caseSeed, numRuns: 1 })[0]!;
}

async function runCase(broker: FuzzBroker, fuzzCase: FuzzCase): Promise<string | undefined> {
  const result = await runFuzzCase(broker.port, fuzzCase).catch((error: unknown) => ({ violation: `the client failed: ${String(error)}`, closeCodes: [] }));
  return result.violation;
}

export async function runAmqpFuzz(options: FuzzRunOptions): Promise<FuzzReport> {
  const broker = await startFuzzBroker();
  const canary = await AmqpCanary.start(broker.port, 'fuzz.canary');
  const baseline = broker.connections();
  const failures: FuzzFailure[] = [];
  const inFlight = new Set<number>();
  let nextIndex = 0;
  let connections = 0;
  let frames = 0;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (failures.length < failuresMax && frames < options.framesTarget) {
      const caseSeed = (options.runSeed + nextIndex++) % 2 ** 31;
      const fuzzCase = caseFromSeed(caseSeed);
      frames += fuzzCase.frameCount;
      inFlight.add(caseSeed);
      const problemsBefore = broker.problems().length;
      const violation = await runCase(broker, fuzzCase);
      const problems = broker.problems().slice(problemsBefore);
      if (problems.length > 0) failures.push({ caseSeeds: [...inFlight], problem: problems.join('\n') });
      if (violation !== undefined) failures.push({ caseSeeds: [caseSeed], problem: `${fuzzCase.context}: ${fuzzCase.label}: ${violation}` });
      if (canary.failures.length > 0 && !failures.some((failure) => failure.problem.startsWith('canary'))) failures.push({ caseSeeds: [...inFlight], problem: `canary: ${canary.failures.join('; ')}` });
      inFlight.delete(caseSeed);
      connections++;
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrentConnections }, worker));
    const seconds = (performance.now() - started) / 1000;
    const forgotten = await connectionsForgotten(broker, baseline);
    if (forgotten !== undefined) failures.push({ caseSeeds: [], problem: forgotten });
    await canary.roundTrip().catch((error: unknown) => failures.push({ caseSeeds: [], problem: `canary after the run: ${String(error)}` }));
    await canary.stop();
    for (const mismatch of await broker.durableMismatches()) failures.push({ caseSeeds: [], problem: `after the run: ${mismatch}` });
    console.log(`amqp: canary slowest publish→confirm→deliver round trip ${canary.slowestRoundTripMs.toFixed(1)} ms`);
    return { protocol: 'amqp', runSeed: options.runSeed, frames, connections, seconds, canaryRoundTrips: canary.roundTrips, failures };
  } finally {
    await canary.stop();
    await broker.close();
  }
}

/** Send one AMQP case (from its seed) and say what it was and what happened. */
export async function replayAmqpCase(caseSeed: number): Promise<void> {
  const broker = await startFuzzBroker();
  try {
    const fuzzCase = caseFromSeed(caseSeed);
    console.log(`case ${caseSeed}: ${fuzzCase.context}: ${fuzzCase.label}, expects ${JSON.stringify(fuzzCase.expect)}, bytes: ${fuzzCase.bytes.toString('hex')}`);
    const violation = await runCase(broker, fuzzCase);
    console.log(`outcome: ${violation ?? 'as owed'}; problems: ${broker.problems().join('\n') || 'none'}`);
  } finally {
    await broker.close();
  }
}

async function connectionsForgotten(broker: FuzzBroker, baseline: number): Promise<string | undefined> {
  const deadline = Date.now() + 10_000;
  while (broker.connections() !== baseline) {
    if (Date.now() > deadline) return `${broker.connections() - baseline} fuzz connection(s) still open 10 s after the run`;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return undefined;
}
