/**
 * Every queue by name, as RabbitMQ lists them. The console and a script ask
 * for the queue list every second or so, and sorting 1,000 names was a tenth
 * of the event loop's instructions in a scrape round (issue 15, callgrind):
 * the last sorted list is kept and given again while the map holds the same
 * queues in the same order (a declare or a delete changes them, a redeclared
 * queue is a new object). Comparing the map's values with the list they were
 * read as, in order, costs no lookup by name.
 */

interface Sorted<Q> {
  /** The map's values when sorted, in the map's order. */
  readonly read: readonly Q[];
  readonly byName: readonly Q[];
}

/** Per map of queues (one per broker), its last sorted list. */
const lastSorted = new WeakMap<ReadonlyMap<string, unknown>, Sorted<unknown>>();

export function sortedByName<Q extends { readonly name: string }>(queues: ReadonlyMap<string, Q>): readonly Q[] {
  const last = lastSorted.get(queues) as Sorted<Q> | undefined;
  if (last !== undefined && holdsInOrder(queues, last.read)) return last.byName;
  const read = [...queues.values()];
  const byName = [...read].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  lastSorted.set(queues, { read, byName });
  return byName;
}

/** Whether the map's values are the objects of `read`, in its order. */
function holdsInOrder<Q>(queues: ReadonlyMap<string, Q>, read: readonly Q[]): boolean {
  if (read.length !== queues.size) return false;
  let at = 0;
  for (const queue of queues.values()) if (queue !== read[at++]) return false;
  return true;
}
