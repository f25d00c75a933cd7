/**
 * tools/bench-mqtt-fanout.ts, the fan-out rows of bench.js mqtt: the tally
 * knows how many messages every subscriber has received (the publisher's
 * window) and who fell short; the case delivers every message to every
 * subscriber of a real broker and counts them; the table cell says what is missing.
 */
import { describe, expect, it } from 'vitest';
import { FanOutTally, fanOut, fanOutCell } from '../../tools/bench-mqtt-fanout.js';
import { useInProcessBroker } from '../support/in-process-broker.js';

describe('FanOutTally', () => {
  it('counts what the slowest subscriber has received, whatever order the deliveries interleave in', () => {
    const tally = new FanOutTally(3, 4);
    tally.receive(0);
    tally.receive(0);
    tally.receive(1);
    expect(tally.receivedByAll).toBe(0);
    tally.receive(2);
    expect(tally.receivedByAll).toBe(1);
    tally.receive(2);
    tally.receive(2);
    tally.receive(1);
    expect(tally.receivedByAll).toBe(2);
    for (const subscriber of [0, 0, 1, 1, 2]) tally.receive(subscriber);
    expect(tally.receivedByAll).toBe(4);
    expect(tally.complete).toBe(true);
    expect(tally.delivered).toBe(12);
    expect(tally.shortSubscribers()).toBe(0);
  });

  it('names the subscribers that fell short', () => {
    const tally = new FanOutTally(4, 3);
    for (const subscriber of [0, 0, 0, 1, 1, 1, 2, 3, 3]) tally.receive(subscriber);
    expect(tally.complete).toBe(false);
    expect(tally.receivedByAll).toBe(1);
    expect(tally.shortSubscribers()).toBe(2);
    expect(fanOutCell({ rate: 1234.4, delivered: 9, expected: 12, shortSubscribers: 2, subscribers: 4, seconds: 1 })).toBe('1,234 msg/s (rcvd 9/12, 2 of 4 subscribers short)');
    expect(fanOutCell({ rate: 99.5, delivered: 12, expected: 12, shortSubscribers: 0, subscribers: 4, seconds: 1 })).toBe('100 msg/s (rcvd 12/12)');
  });
});

describe('fan-out on a real broker', () => {
  const broker = useInProcessBroker('bench-fanout');

  it.each([0, 1] as const)('delivers every QoS %i message to every subscriber and counts each delivery once', async (qos) => {
    const result = await fanOut(broker.server.port, `fan/q${qos}`, qos, { subscribers: 6, messages: 300, windowMessages: 20, stallMs: 2_000 });
    expect(result.expected).toBe(1800);
    expect(result.delivered).toBe(1800);
    expect(result.shortSubscribers).toBe(0);
    expect(result.rate).toBeGreaterThan(0);
    expect(result.rate).toBeCloseTo(1800 / result.seconds, 6);
  });
});
