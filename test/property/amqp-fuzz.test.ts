/**
 * AMQP fuzzing in the suite (issue 11): generated and mutated frames before
 * and after a valid handshake, against a real in-process broker over TCP,
 * for a bounded time. Properties, case by case:
 * - the process never throws: no uncaught exception, no unhandled
 *   rejection, no assertion, and no warn/error log line (an "AMQP internal
 *   error" is a handler that threw what it should have rejected);
 * - each connection ends: a known fault gets connection.close with the reply
 *   code it is owed, then the socket ends; noise ends when the client
 *   half-closes; and the broker forgets the connection;
 * - a canary amqplib client on another connection keeps publishing with
 *   confirms and consuming throughout;
 * and at the end, each durable queue holds the persistent messages the log
 * says it holds.
 *
 * The cases are in tools/amqp-fuzz-cases.ts, shared with `npm run bench --
 * fuzz`. Replay a failure with CAIRN_TEST_SEED=<seed> (printed below).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { amqpFuzzCase, type FuzzCase } from '../../tools/amqp-fuzz-cases.js';
import { runFuzzCase } from '../../tools/amqp-fuzz-client.js';
import { AmqpCanary, startFuzzBroker, type FuzzBroker } from '../../tools/amqp-fuzz-harness.js';
import { announceSeed, testSeed, until } from '../support/kit.js';

/** How long the fuzzer runs in `npm test`. */
const fuzzTimeMs = 12_000;

let broker: FuzzBroker;
let canary: AmqpCanary;

beforeAll(async () => {
  broker = await startFuzzBroker();
  canary = await AmqpCanary.start(broker.port, 'fuzz.canary');
});

afterAll(async () => {
  await canary?.stop();
  await broker?.close();
});

describe('AMQP fuzzing against a live broker', () => {
  it('no frame kills the broker, every bad connection is closed with its reply code, the canary keeps going', async () => {
    const seed = announceSeed('AMQP fuzz', testSeed);
    const baseline = broker.connections();
    let cases = 0;
    const byExpectation = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(amqpFuzzCase(), async (fuzzCase: FuzzCase) => {
        const problemsBefore = broker.problems().length;
        const result = await runFuzzCase(broker.port, fuzzCase);
        cases++;
        byExpectation.set(fuzzCase.expect.kind, (byExpectation.get(fuzzCase.expect.kind) ?? 0) + 1);
        const where = `${fuzzCase.context}: ${fuzzCase.label} (bytes ${fuzzCase.bytes.subarray(0, 64).toString('hex')}${fuzzCase.bytes.length > 64 ? '…' : ''})`;
        const problems = broker.problems().slice(problemsBefore);
        if (problems.length > 0) throw new Error(`${where}: ${problems.join('\n')}`);
        if (result.violation !== undefined) throw new Error(`${where}: ${result.violation}`);
        await until(() => broker.connections() === baseline, `the broker to forget the connection of ${where}`, 5_000);
        if (canary.failures.length > 0) throw new Error(`after ${where}: ${canary.failures.join('\n')}`);
      }),
      { seed, numRuns: 1_000_000, plugins: [fc.interruptAfterTimeLimit(fuzzTimeMs)] },
    );
    const roundTripsDuringFuzz = canary.roundTrips;
    await canary.roundTrip();
    console.log(`[amqp fuzz] ${cases} cases (${[...byExpectation].map(([kind, count]) => `${kind} ${count}`).join(', ')}); canary: ${roundTripsDuringFuzz} round trips, slowest ${canary.slowestRoundTripMs.toFixed(1)} ms`);
    expect(cases).toBeGreaterThan(50);
    expect(roundTripsDuringFuzz, 'canary round trips while the fuzzer ran').toBeGreaterThan(0);
    expect(canary.failures).toEqual([]);
    expect(broker.problems()).toEqual([]);
    await canary.stop();
    expect(await broker.durableMismatches(), 'durable queues against the log').toEqual([]);
  }, fuzzTimeMs + 30_000);
});
