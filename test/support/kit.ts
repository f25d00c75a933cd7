/**
 * The shared test kit: temporary directories that clean up after themselves,
 * `until` (wait on a fact, never on a fixed sleep), and one seed that every
 * randomized test uses and prints, so a failing run is replayed with
 * `CAIRN_TEST_SEED=<seed> npm test`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The run's seed: CAIRN_TEST_SEED when set, otherwise drawn once per test process. */
export const testSeed: number = (() => {
  const fromEnv = process.env['CAIRN_TEST_SEED'];
  if (fromEnv !== undefined && fromEnv !== '') {
    const parsed = Number(fromEnv);
    if (!Number.isSafeInteger(parsed)) throw new Error(`CAIRN_TEST_SEED must be an integer, got '${fromEnv}'`);
    return parsed;
  }
  return Math.floor(Math.random() * 2 ** 31);
})();

/** Prints the seed beside a test's name; call it at the start of every randomized test. */
export function announceSeed(testName: string, seed: number = testSeed): number {
  console.log(`[seed] ${testName}: CAIRN_TEST_SEED=${seed}`);
  return seed;
}

/** A small deterministic generator (mulberry32): the same seed gives the same sequence. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A fresh directory under the OS temp dir; `remove()` deletes it and everything in it. */
export function tempDirectory(prefix = 'cairn-test-'): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * Resolves once `condition` holds (it may be async), polling every few ms;
 * rejects after `timeoutMs` with `what` in the message, so a failure says
 * which fact never came true.
 */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what = 'condition',
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
