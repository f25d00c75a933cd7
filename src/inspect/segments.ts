/**
 * `cairn inspect segments`: each segment with its LSN range, time range, size
 * and record count, then the snapshots with their LSN. Scans every segment
 * once (the time range of older segments is not kept anywhere else).
 *
 *   segment                       first LSN  last LSN  records  bytes  first time  last time
 */
import { isoTime } from './format.js';
import { dataFlag, jsonFlag, requiredString, type CommandSpec, type ParsedFlags } from './args.js';
import { writeLines } from './output.js';
import type { InspectIo } from './progress.js';
import { openSource } from './source.js';

export const segmentsCommand: CommandSpec = {
  name: 'inspect segments',
  summary: 'Lists the segment files with their LSN and time ranges, sizes and record counts, then the snapshots.',
  flags: [dataFlag, jsonFlag],
  examples: ['cairn inspect segments --data ./data'],
};

export async function inspectSegments(flags: ParsedFlags, io: InspectIo): Promise<number> {
  const source = await openSource(requiredString('inspect segments', flags, 'data'));
  // verify() reads every frame; as a side effect the reader learns each segment's timestamps.
  const report = source.reader.verify();
  const segments = source.reader.segments().map((s) => ({ ...s, records: Math.max(0, s.lastLsn - s.firstLsn + 1) }));
  const snapshots = report.snapshots;
  if (flags.booleans.has('json')) {
    await writeLines(io.stdout, [...segments.map((s) => JSON.stringify({ type: 'segment', ...s })), ...snapshots.map((s) => JSON.stringify({ type: 'snapshot', ...s }))]);
    return 0;
  }
  const header = `${'segment'.padEnd(28)} ${'first LSN'.padStart(10)} ${'last LSN'.padStart(10)} ${'records'.padStart(8)} ${'bytes'.padStart(12)}  first time                last time`;
  const rows = segments.map((s) => `${s.file.padEnd(28)} ${String(s.firstLsn).padStart(10)} ${String(s.lastLsn).padStart(10)} ${String(s.records).padStart(8)} ${String(s.bytes).padStart(12)}  ${(s.firstTimestamp === undefined ? '-' : isoTime(s.firstTimestamp)).padEnd(24)}  ${s.lastTimestamp === undefined ? '-' : isoTime(s.lastTimestamp)}`);
  const snapshotRows = snapshots.length === 0 ? ['no snapshots'] : snapshots.map((s) => `snapshot ${s.file} LSN ${s.lsn} ${s.bytes} bytes${s.valid ? '' : ` INVALID: ${s.reason ?? ''}`}`);
  await writeLines(io.stdout, [header, ...rows, ...snapshotRows]);
  return 0;
}
