/**
 * The pure half of the scrape bench's tail trace (tools/tail-trace-scrape-join.ts):
 * round trips given the kind of the window their start fell in, the broker's
 * threads told apart by what /proc showed of them, holders named by party,
 * and per kind the CPU each party held over all round trips against the
 * slowest 1%.
 */
import { describe, expect, it } from 'vitest';
import { brokerRoles, brokerThreadRoles, holdersOf, partyLabeller, windowKinds, type ThreadSnapshot } from '../../tools/tail-trace-scrape-join.js';
import { slowestIndexes, type WindowSplit } from '../../tools/tail-trace-join.js';

describe('windowKinds', () => {
  it("gives a round trip the kind of the window its start fell in, and none outside every window", () => {
    // Spans in ms, given out of order; round trips in ns.
    const spans = [{ kind: 'decoy', startMs: 20, endMs: 30 }, { kind: 'plain', startMs: 10, endMs: 20 }, { kind: 'scraped', startMs: 31, endMs: 40 }] as const;
    const ms = (value: number): number => value * 1e6;
    const rounds: Array<[number, number]> = [[ms(5), ms(6)], [ms(10), ms(11)], [ms(19.9), ms(20.5)], [ms(20), ms(21)], [ms(30), ms(30.5)], [ms(39), ms(41)], [ms(40), ms(41)]];
    expect(windowKinds(rounds, spans)).toEqual([undefined, 'plain', 'plain', 'decoy', undefined, 'scraped', undefined]);
  });
});

describe('brokerThreadRoles', () => {
  const pid = 500;
  const thread = (tid: number, syscall: number | undefined, runNs: number): ThreadSnapshot => ({ tid, syscall, runNs });
  // As a broker shows them idle: the loop and two epoll waiters (the delayed-task thread, the socket worker), the rest in futex.
  const before = [thread(pid, 281, 1000), thread(502, 281, 10), ...[503, 504, 505, 506].map((tid) => thread(tid, 202, 100)), thread(507, 202, 1), ...[508, 509, 510, 511].map((tid) => thread(tid, 202, 50)), thread(515, 281, 5000)];

  it('names the epoll waiter whose CPU grew most under the requests the socket thread, and the rest by order of creation', () => {
    // Requests: the loop and the socket thread grow; a pool thread grows too, but it waits in futex.
    const after = before.map((t) => (t.tid === pid ? { ...t, runNs: 90_000 } : t.tid === 515 ? { ...t, runNs: 60_000 } : t.tid === 509 ? { ...t, runNs: 70_000 } : t));
    const roles = brokerThreadRoles(pid, before, after);
    expect(Object.fromEntries(roles)).toEqual({
      500: brokerRoles.loop, 502: brokerRoles.delayedTasks, 515: brokerRoles.socketThread,
      503: brokerRoles.platformWorker, 504: brokerRoles.platformWorker, 505: brokerRoles.platformWorker, 506: brokerRoles.platformWorker,
      507: brokerRoles.signalThread, 508: brokerRoles.pool, 509: brokerRoles.pool, 510: brokerRoles.pool, 511: brokerRoles.pool,
    });
  });

  it('counts a thread born during the requests by all its CPU, and names no socket thread when no epoll waiter grew', () => {
    const born = [...before.filter((t) => t.tid !== 515), thread(520, 232, 40_000)];
    expect(brokerThreadRoles(pid, before.filter((t) => t.tid !== 515), born).get(520)).toBe(brokerRoles.socketThread);
    const idle = brokerThreadRoles(pid, before, before);
    expect([...idle.values()]).not.toContain(brokerRoles.socketThread);
    expect(idle.get(515)).toBe(brokerRoles.delayedTasks);
  });
});

describe('partyLabeller', () => {
  it('names a holder by role, by process, as the kernel, or as an outsider', () => {
    const threads = new Map([[600, { tgid: 600, comm: 'node' }], [601, { tgid: 600, comm: 'node' }], [700, { tgid: 700, comm: 'kworker/1:2H-kblockd' }], [701, { tgid: 701, comm: 'ksoftirqd/0' }], [800, { tgid: 800, comm: 'sshd' }]]);
    const label = partyLabeller({ roles: new Map([[600, 'scraper loop']]), processes: new Map([[600, 'scraper']]), threads });
    expect([600, 601, 700, 701, 800, 0, 999, 'irq:virtio1-req.0', 'softirq:NET_RX'].map(label))
      .toEqual(['scraper loop', 'scraper', 'kernel: kworker', 'kernel: ksoftirqd', 'outside: sshd', 'idle', 'unknown', 'kernel: irq:virtio1-req.0', 'kernel: softirq:NET_RX']);
  });
});

describe('holdersOf', () => {
  it('averages what each party held over all round trips, over the slowest 1%, and while the loop or client waited there', () => {
    const windows: Array<[number, number]> = [];
    const splits: WindowSplit[] = [];
    for (let i = 0; i < 198; i++) {
      windows.push([i * 1000, i * 1000 + 100]);
      splits.push({ byCategory: [], heldBy: new Map(), heldAll: new Map([['broker: event loop', 100], ['idle', 100]]) });
    }
    // The two slowest (1% of 200): the socket thread held the CPU the loop waited on.
    windows.push([500_000, 500_400], [600_000, 600_300]);
    splits.push({ byCategory: [], heldBy: new Map([['socket', 200]]), heldAll: new Map([['broker: event loop', 200], ['socket', 600]]) });
    splits.push({ byCategory: [], heldBy: new Map([['socket', 100]]), heldAll: new Map([['broker: event loop', 200], ['socket', 400]]) });
    expect(slowestIndexes(windows)).toEqual([198, 199]);
    const holders = holdersOf(windows, splits);
    expect(Object.fromEntries(holders.tail)).toEqual({ 'broker: event loop': 200, socket: 500 });
    expect(Object.fromEntries(holders.tailWaiting)).toEqual({ socket: 150 });
    expect(holders.all.get('broker: event loop')).toBe((198 * 100 + 400) / 200);
    expect(holders.all.get('idle')).toBe((198 * 100) / 200);
  });
});
