/**
 * Where a broker's round trip spends its time, read from the outside: Linux
 * keeps, per thread, the time it ran on a CPU and the time it waited in a run
 * queue for one (/proc/PID/task/TID/schedstat, nanoseconds). Summed over the
 * samples of a latency case and divided by its round trips, that splits one
 * round trip into the event loop's CPU, the other threads' CPU (libuv's pool,
 * where the fdatasync runs, and V8's helpers: Node names them all "node"), and
 * the wait for a CPU: on a shared 2-core machine the last one is often the
 * biggest, and no change in the broker removes it.
 */
import * as fs from 'node:fs';
import type { RoundTripCase } from './bench-side-by-side.js';

export interface ThreadTimes {
  /** The event loop thread (its id is the process id): ran on a CPU / waited for one. */
  readonly loopRunNs: number;
  readonly loopWaitNs: number;
  /** Every other thread. */
  readonly otherRunNs: number;
  readonly otherWaitNs: number;
}

const zeroTimes: ThreadTimes = { loopRunNs: 0, loopWaitNs: 0, otherRunNs: 0, otherWaitNs: 0 };

/** Now, for every thread of `pid`; undefined where /proc is not there or the process is gone. */
export function threadTimes(pid: number): ThreadTimes | undefined {
  let tasks: string[];
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  let { loopRunNs, loopWaitNs, otherRunNs, otherWaitNs } = zeroTimes;
  for (const task of tasks) {
    let fields: string[];
    try {
      fields = fs.readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ');
    } catch {
      continue; // the thread ended while we read
    }
    const run = Number(fields[0]);
    const wait = Number(fields[1]);
    if (task === String(pid)) {
      loopRunNs += run;
      loopWaitNs += wait;
    } else {
      otherRunNs += run;
      otherWaitNs += wait;
    }
  }
  return { loopRunNs, loopWaitNs, otherRunNs, otherWaitNs };
}

/** A latency case whose samples also count the thread times `pid` spent meanwhile. */
export interface TimedCase extends RoundTripCase {
  /** Microseconds per round trip over every sample so far; undefined without /proc. */
  perRoundTrip(): { loopRunUs: number; loopWaitUs: number; otherRunUs: number; otherWaitUs: number } | undefined;
}

export function timedCase(pid: number | undefined, inner: RoundTripCase): TimedCase {
  let total = zeroTimes;
  let roundTrips = 0;
  let available = pid !== undefined;
  return {
    sample: async (count) => {
      const before = pid === undefined ? undefined : threadTimes(pid);
      const samples = await inner.sample(count);
      const after = pid === undefined ? undefined : threadTimes(pid);
      if (before === undefined || after === undefined) {
        available = false;
      } else {
        total = {
          loopRunNs: total.loopRunNs + after.loopRunNs - before.loopRunNs,
          loopWaitNs: total.loopWaitNs + after.loopWaitNs - before.loopWaitNs,
          otherRunNs: total.otherRunNs + after.otherRunNs - before.otherRunNs,
          otherWaitNs: total.otherWaitNs + after.otherWaitNs - before.otherWaitNs,
        };
        roundTrips += samples.length;
      }
      return samples;
    },
    close: () => inner.close(),
    perRoundTrip: () => {
      if (!available || roundTrips === 0) return undefined;
      const us = (ns: number): number => ns / 1000 / roundTrips;
      return { loopRunUs: us(total.loopRunNs), loopWaitUs: us(total.loopWaitNs), otherRunUs: us(total.otherRunNs), otherWaitUs: us(total.otherWaitNs) };
    },
  };
}
