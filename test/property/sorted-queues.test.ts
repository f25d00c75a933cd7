/**
 * sortedByName (src/http/management/sorted-queues.ts): the list it gives
 * after any declares, deletes and redeclares (a new object under an old name)
 * is the map's queues sorted afresh, and a map that has not changed gets the
 * last list again rather than a new sort.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sortedByName } from '../../src/http/management/sorted-queues.js';
import { announceSeed, testSeed } from '../support/kit.js';

interface Queue { readonly name: string }

/** One change to the map: declare (or redeclare, a new object) a name, or delete it; names from a small set so they meet. */
const changeArbitrary = fc.tuple(fc.constantFrom('declare', 'delete'), fc.constantFrom('a', 'b', 'B', 'a-1', 'a-10', 'a-2', '', 'é', 'z'));

function freshSort(queues: ReadonlyMap<string, Queue>): Queue[] {
  return [...queues.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

describe('queues sorted by name, the last sort kept', () => {
  it('after any declares, deletes and redeclares, the list is the map\'s queues sorted afresh (the same objects)', () => {
    const seed = announceSeed('sorted queues kept', testSeed);
    fc.assert(fc.property(fc.array(fc.array(changeArbitrary, { maxLength: 3 }), { minLength: 1, maxLength: 12 }), (steps) => {
      const queues = new Map<string, Queue>();
      for (const changes of steps) {
        for (const [change, name] of changes) {
          if (change === 'declare') queues.set(name, { name });
          else queues.delete(name);
        }
        const listed = sortedByName(queues);
        const fresh = freshSort(queues);
        expect(listed.length).toBe(fresh.length);
        listed.forEach((queue, i) => expect(queue).toBe(fresh[i]));
      }
    }), { seed, numRuns: 500 });
  });

  it('a map that has not changed gets the same list, not a new sort', () => {
    const queues = new Map(['q-2', 'q-10', 'q-1'].map((name) => [name, { name }]));
    const first = sortedByName(queues);
    expect(first.map((queue) => queue.name)).toEqual(['q-1', 'q-10', 'q-2']);
    expect(sortedByName(queues)).toBe(first);
    queues.set('q-10', { name: 'q-10' });
    const afterRedeclare = sortedByName(queues);
    expect(afterRedeclare).not.toBe(first);
    expect(afterRedeclare[1]).toBe(queues.get('q-10'));
  });
});
