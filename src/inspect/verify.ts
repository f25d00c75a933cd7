/**
 * `cairn inspect verify`: every record's checksum and the LSN chain across
 * segments, the torn tail, bad records and segments (each with its segment
 * file and LSN), and every snapshot's checksum.
 *
 * Exit codes: 0 healthy; 1 anything else. The last line says which:
 *   healthy      — every check passed
 *   recoverable  — only a torn tail (normal after a crash: start-up truncates it)
 *                  and/or invalid snapshots (start-up skips them)
 *   damaged      — bad records or segments: start-up refuses until repaired
 */
import { parseFlags, requiredString } from './args.js';
import { writeLines } from './output.js';
import type { InspectIo } from './progress.js';
import { openSource } from './source.js';

export async function inspectVerify(args: readonly string[], io: InspectIo): Promise<number> {
  const flags = parseFlags('inspect verify', args, { data: 'string', json: 'boolean' });
  const dir = requiredString('inspect verify', flags, 'data');
  const source = openSource(dir);
  if (io.isTTY) io.stderr.write(`verifying ${dir}…`);
  const report = source.reader.verify();
  if (io.isTTY) io.stderr.write('\r\u001b[2K');
  const invalidSnapshots = report.snapshots.filter((s) => !s.valid);
  const damaged = !report.ok;
  const verdict = damaged ? 'damaged' : report.tornTail !== undefined || invalidSnapshots.length > 0 ? 'recoverable' : 'healthy';
  if (flags.booleans.has('json')) {
    await writeLines(io.stdout, [JSON.stringify({ verdict, ...report })]);
    return verdict === 'healthy' ? 0 : 1;
  }
  const lines = [
    `${report.segments} segment(s), ${report.records} record(s), ${report.bytes} bytes, LSN ${report.firstLsn}..${report.lastLsn}`,
    ...report.snapshots.map((s) => `snapshot ${s.file} LSN ${s.lsn} ${s.bytes} bytes: ${s.valid ? 'ok' : `INVALID (${s.reason ?? 'unknown'}); start-up ignores it`}`),
    ...report.badSegments.map((s) => `BAD SEGMENT ${s.segment}: ${s.reason}`),
    ...report.badRecords.map((r) => `BAD RECORD segment ${r.segment} LSN ${r.lsn} offset ${r.offset}: ${r.reason}`),
  ];
  if (report.tornTail !== undefined) {
    const t = report.tornTail;
    lines.push(`torn tail in segment ${t.segment} at LSN ${t.lsn}: ${t.bytesDropped} bytes (${t.reason}); recoverable: start-up truncates it (those records were never acknowledged)`);
  }
  lines.push(verdictLine(verdict));
  await writeLines(io.stdout, lines);
  return verdict === 'healthy' ? 0 : 1;
}

function verdictLine(verdict: string): string {
  if (verdict === 'healthy') return 'healthy: every checksum and the LSN chain are intact';
  if (verdict === 'recoverable') return 'recoverable: the broker starts and repairs this on its own (exit code 1)';
  return 'damaged: the broker will refuse to start; inspect the records around the LSNs above (exit code 1)';
}
