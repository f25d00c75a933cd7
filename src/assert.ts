/**
 * assert() is for invariants that must never break. A broker that continues on
 * broken state loses data, so a failed assertion crashes the process; never catch it.
 */
export class AssertionError extends Error {
  override readonly name = 'AssertionError';
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new AssertionError(message);
}
