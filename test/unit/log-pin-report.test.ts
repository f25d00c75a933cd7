/**
 * The pin description (src/log-pin-report.ts) at its edges: nothing queued, a
 * pin inside a segment (bytes from that segment on), a pin whose record is no
 * longer in the log (no segment, no age: retention of an older version may
 * have removed it), and an unreadable timestamp.
 */
import { describe, expect, it } from 'vitest';
import { describeLogPin, describeLogPinLine } from '../../src/log-pin-report.js';
import type { SegmentInfo } from '../../src/log/index.js';

const segments: SegmentInfo[] = [
  { file: 'a.seg', firstLsn: 10, lastLsn: 19, bytes: 1000 },
  { file: 'b.seg', firstLsn: 20, lastLsn: 29, bytes: 2000 },
  { file: 'c.seg', firstLsn: 30, lastLsn: 33, bytes: 400 },
];

describe('describeLogPin', () => {
  it('nothing queued: no pin', () => {
    expect(describeLogPin(undefined, segments, () => 0, 0)).toBeUndefined();
    expect(describeLogPinLine(undefined)).toMatch(/none/);
  });

  it('a queue message in the middle segment pins that segment and every newer one; its age comes from its record', () => {
    const report = describeLogPin({ lsn: 25, holder: { kind: 'queue', queue: 'orders', seq: 7 } }, segments, (lsn) => (lsn === 25 ? 1_000 : undefined), 61_000);
    expect(report).toEqual({ destinationType: 'queue', destination: 'orders', seq: 7, lsn: 25, segment: 'b.seg', timestamp: 1_000, ageSeconds: 60, pinnedBytes: 2400 });
    expect(describeLogPinLine(report)).toBe('oldest live message: queue "orders" seq 7, LSN 25 (segment b.seg; 1970-01-01T00:00:01.000Z, age 60.0 s); pins 2400 bytes of log from its segment on');
  });

  it('a session message whose record is gone: no segment, no age, the whole log counted', () => {
    let asked = false;
    const report = describeLogPin({ lsn: 3, holder: { kind: 'session', client: 'cold', seq: 1 } }, segments, () => { asked = true; return 5; }, 10_000);
    expect(report).toMatchObject({ destinationType: 'session', destination: 'cold', segment: undefined, timestamp: undefined, ageSeconds: undefined, pinnedBytes: 3400 });
    expect(asked).toBe(false);
    expect(describeLogPinLine(report)).toMatch(/no longer in the log; time unknown/);
  });

  it("a collection's first document: destination type collection, the document id in place of a seq", () => {
    const report = describeLogPin({ lsn: 12, holder: { kind: 'collection', collection: 'readings', id: 1 } }, segments, () => 1_000, 3_000);
    expect(report).toEqual({ destinationType: 'collection', destination: 'readings', seq: 1, lsn: 12, segment: 'a.seg', timestamp: 1_000, ageSeconds: 2, pinnedBytes: 3400 });
    expect(describeLogPinLine(report)).toBe('oldest live message: collection "readings" document 1, LSN 12 (segment a.seg; 1970-01-01T00:00:01.000Z, age 2.0 s); pins 3400 bytes of log from its segment on');
  });

  it('an unreadable record: in its segment, age unknown', () => {
    const report = describeLogPin({ lsn: 33, holder: { kind: 'queue', queue: 'q', seq: 2 } }, segments, () => undefined, 10_000);
    expect(report).toMatchObject({ segment: 'c.seg', timestamp: undefined, ageSeconds: undefined, pinnedBytes: 400 });
  });
});
