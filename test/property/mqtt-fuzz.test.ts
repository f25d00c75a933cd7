/**
 * MQTT fuzzing against a whole in-process Cairn over TCP, for a bounded time
 * (fuzzTimeMs): generated and mutated connections (tools/mqtt-fuzz-frames.ts)
 * one after another, while an MQTT.js canary on its own connection keeps
 * publishing and receiving QoS 1. After every case: nothing was thrown in the
 * process (no uncaught exception, no unhandled rejection, no assertion), the
 * broker closed the case's connection within closeTimeoutMs (on its own for
 * a case that breaks a rule [MQTT-4.8.0-1], after the client's FIN for random
 * bytes), and the canary has not failed. The seed is printed; a failing run
 * replays with CAIRN_TEST_SEED=<seed>, and fast-check shrinks it first.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendFuzzCase } from '../../tools/fuzz-socket.js';
import { InProcessCairn } from '../../tools/in-process-cairn.js';
import { MqttCanary } from '../../tools/mqtt-canary.js';
import { mqttFuzzCase } from '../../tools/mqtt-fuzz-frames.js';
import { ProcessErrorWatch } from '../../tools/process-error-watch.js';
import { announceSeed, testSeed } from '../support/kit.js';

const fuzzTimeMs = 12_000;
const closeTimeoutMs = 5_000;
const packetBytesMax = 4096;

let cairn: InProcessCairn;
let canary: MqttCanary;
let processErrors: ProcessErrorWatch;

beforeAll(async () => {
  processErrors = ProcessErrorWatch.start();
  cairn = await InProcessCairn.start({ logLevel: 'warn', flags: ['--mqtt-max-packet-bytes', String(packetBytesMax)] });
  canary = await MqttCanary.connect(cairn.mqttPort);
});

afterAll(async () => {
  processErrors.stop();
  await canary.stop();
  await cairn.stop();
});

describe('MQTT fuzzing over TCP', () => {
  it('survives every generated connection, closes each one, and keeps serving a QoS 1 canary [MQTT-4.8.0-1]', async () => {
    announceSeed('mqtt fuzz');
    canary.runInBackground();
    const seen = { cases: 0, frames: 0, mustClose: 0 };
    await fc.assert(
      fc.asyncProperty(mqttFuzzCase({ packetBytesMax, goodFramesMin: 0, goodFramesMax: 6 }), async (fuzzCase) => {
        const outcome = await sendFuzzCase({ port: cairn.mqttPort, writes: fuzzCase.writes, halfClose: !fuzzCase.brokerMustClose, closeTimeoutMs });
        seen.cases += 1;
        seen.frames += fuzzCase.frames;
        if (fuzzCase.brokerMustClose) seen.mustClose += 1;
        expect(processErrors.describe(), `uncaught in the process after ${fuzzCase.name}`).toBe('');
        expect(outcome, `connection after ${fuzzCase.name}`).toBe('closed');
        expect(canary.failure, `canary after ${fuzzCase.name}`).toBeUndefined();
      }),
      { seed: testSeed, numRuns: 1_000_000, interruptAfterTimeLimit: fuzzTimeMs },
    );
    const roundTripsDuringFuzz = canary.roundTrips;
    await canary.stop();
    console.log(`[mqtt fuzz] ${seen.cases} connections (${seen.mustClose} breaking a rule), ${seen.frames} frames, ${roundTripsDuringFuzz} canary round trips`);
    // The run was not vacuous: cases ran, the canary kept going, and nothing was logged as a broker error.
    expect(seen.mustClose).toBeGreaterThan(20);
    expect(roundTripsDuringFuzz).toBeGreaterThan(10);
    expect(canary.failure).toBeUndefined();
    expect(cairn.errorLines).toEqual([]);
    canary = await MqttCanary.connect(cairn.mqttPort);
    await canary.roundTrip();
  });
});
