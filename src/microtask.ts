/**
 * queueMicrotask without its per-call cost, for the tasks the hot paths queue once per packet or batch (a tick's
 * deferred commit, its coalesced acks, a write's pump). Node's queueMicrotask makes an AsyncResource and a bound
 * function for each task, and the AsyncResource's shape (a property added after construction) is a V8 map
 * transition that a full GC drops while no task is pending: the optimised code of every caller was then thrown away
 * and recompiled. A reaction on one settled promise runs in the same microtask queue, in the same order.
 * A task that throws still ends the process: its rejection is unhandled, which Node raises as an uncaught exception.
 */
const settled = Promise.resolve();

export function queueMicrotaskPlain(task: () => void): void {
  void settled.then(task);
}
