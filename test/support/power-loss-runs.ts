/**
 * How the power-loss properties run a life and a series of seeded cases, so
 * that one seed replays one run exactly:
 * - a life runs twice from the same disk and seed: a dry run on a copy counts
 *   its file-system calls, then the real run loses the power after a seeded
 *   one of them; both must make the same calls (the seed decides everything);
 * - the lazy-sync timer is faked (the test advances it itself), so no real
 *   clock decides when an fdatasync happens;
 * - cases run with seeds CAIRN_TEST_SEED, +1, +2, … within a time budget, and
 *   a failing case prints its own seed: given as CAIRN_TEST_SEED, it runs first.
 */
import { afterAll, beforeAll, vi } from 'vitest';
import { announceSeed, testSeed } from './kit.js';
import { expectSameCalls, SimulatedStorage, type InjectedFault } from './simulated-storage.js';

export interface PowerLoss {
  /** The disk as the reboot finds it. */
  readonly image: SimulatedStorage;
  readonly crashAfterCalls: number;
  /** Calls the whole life would have made. */
  readonly calls: number;
}

/**
 * Runs `life` on a copy of `disk` until the power goes off after a seeded call
 * (`pickCall(n)` picks it among the n calls a dry run made), and returns what
 * the disk kept. `life(disk, dry)` must behave the same whatever `dry` says,
 * except for what it records.
 */
export async function lifeUntilPowerLoss(
  disk: SimulatedStorage,
  lifeSeed: number,
  faults: readonly InjectedFault[],
  pickCall: (calls: number) => number,
  life: (disk: SimulatedStorage, dry: boolean) => Promise<void>,
): Promise<PowerLoss> {
  const dry = disk.clone({ seed: lifeSeed, faults });
  await life(dry, true);
  vi.clearAllTimers();
  const crashAfterCalls = pickCall(dry.calls);
  const live = disk.clone({ seed: lifeSeed, faults, crashAfterCalls });
  await life(live, false);
  vi.clearAllTimers();
  expectSameCalls(dry, live);
  return { image: live.powerLoss({ seed: lifeSeed }), crashAfterCalls, calls: dry.calls };
}

/** Fakes the lazy-sync timer for the file's tests (see above). */
export function fakeTimersForPowerLoss(): void {
  beforeAll(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterAll(() => {
    vi.useRealTimers();
  });
}

/** Runs `runCase` for consecutive seeds within the budget; returns how many ran. */
export async function runSeededCases(
  name: string,
  budget: { readonly casesMax: number; readonly milliseconds: number },
  runCase: (seed: number) => Promise<void>,
  describeCase: (seed: number) => unknown,
): Promise<number> {
  announceSeed(name);
  const started = performance.now();
  let cases = 0;
  for (; cases < budget.casesMax && performance.now() - started < budget.milliseconds; cases++) {
    const seed = (testSeed + cases) >>> 0;
    try {
      await runCase(seed);
    } catch (error) {
      const description = JSON.stringify(describeCase(seed), (key, value: unknown) => (typeof value === 'function' || key === 'logger' ? undefined : value));
      console.log(`${name}: case failed; CAIRN_TEST_SEED=${seed} replays it first (${description})`);
      throw error;
    } finally {
      vi.clearAllTimers();
    }
  }
  return cases;
}
