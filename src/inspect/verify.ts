/**
 * `cairn inspect verify`: every record's checksum and the LSN chain across
 * segments, the torn tail, bad records and segments (each with its segment
 * file and LSN), every snapshot's checksum — and what the broker would make
 * of it all, from the same judgement its start-up runs (src/log/judge.ts).
 *
 * Exit codes: 0 healthy; 1 anything else. The last line says which:
 *   healthy      — every check passed
 *   recoverable  — only a torn tail (start-up truncates it) and/or invalid
 *                  snapshots (start-up skips them)
 *   degraded     — the broker starts (replay does not need the damaged
 *                  records) and reports the LSNs that can no longer be restored
 *   damaged      — the broker refuses to start, with the message shown
 */
import { describeTornTail, judgeDataDirectory, LogError, type DataDirectoryJudgement, type VerifyReport } from '../log/index.js';
import { dataFlag, jsonFlag, requiredString, type CommandSpec, type ParsedFlags } from './args.js';
import { writeLines } from './output.js';
import type { InspectIo } from './progress.js';
import { isJetStreamLocation, openSource } from './source.js';

type Verdict = 'healthy' | 'recoverable' | 'degraded' | 'damaged';

export const verifyCommand: CommandSpec = {
  name: 'inspect verify',
  summary: 'Checks every record\'s checksum, the LSN chain and the snapshots. Exit 0 when healthy, 1 otherwise (recoverable, degraded or damaged).',
  flags: [dataFlag, jsonFlag],
  examples: ['cairn inspect verify --data ./data'],
};

export async function inspectVerify(flags: ParsedFlags, io: InspectIo): Promise<number> {
  const dir = requiredString('inspect verify', flags, 'data');
  const source = await openSource(dir);
  if (io.isTTY) io.stderr.write(`verifying ${dir}…`);
  const report = source.reader.verify();
  const judgement = isJetStreamLocation(dir) ? judgeStream(report) : await judgeDataDirectory(dir);
  if (io.isTTY) io.stderr.write('\r\u001b[2K');
  const invalidSnapshots = report.snapshots.filter((s) => !s.valid);
  const verdict = verdictOf(judgement, report.tornTail !== undefined || invalidSnapshots.length > 0);
  if (flags.booleans.has('json')) {
    const startup = judgement.startup.starts ? { starts: true } : { starts: false, refusal: judgement.startup.refusal.message, code: judgement.startup.refusal.code };
    await writeLines(io.stdout, [JSON.stringify({ verdict, ...report, startup, history: judgement.history ?? null })]);
    return verdict === 'healthy' ? 0 : 1;
  }
  const lines = [
    `${report.segments} segment(s), ${report.records} record(s), ${report.bytes} bytes, LSN ${report.firstLsn}..${report.lastLsn}`,
    ...report.snapshots.map((s) => `snapshot ${s.file} LSN ${s.lsn} ${s.bytes} bytes: ${s.valid ? 'ok' : `INVALID (${s.reason ?? 'unknown'}); start-up ignores it`}`),
    ...report.badSegments.map((s) => `BAD SEGMENT ${s.segment}: ${s.reason}`),
    ...report.badRecords.map((r) => `BAD RECORD segment ${r.segment} LSN ${r.lsn} offset ${r.offset}: ${r.reason}`),
    ...(judgement.history?.damage ?? []).map((d) => `DAMAGED HISTORY segment ${d.segment} LSN ${d.firstLsn}..${d.lastLsn}: ${d.reason}`),
  ];
  if (report.tornTail !== undefined) lines.push(`${describeTornTail(report.tornTail)}; recoverable: start-up truncates it`);
  lines.push(verdictLine(verdict, judgement));
  await writeLines(io.stdout, lines);
  return verdict === 'healthy' ? 0 : 1;
}

/** A JetStream log has no torn tail or history damage: a node reading it refuses the first bad message. */
function judgeStream(report: VerifyReport): DataDirectoryJudgement {
  const bad = report.badRecords[0];
  if (bad === undefined) return { startup: { starts: true, replayFromLsn: report.firstLsn, tornTail: undefined }, history: undefined };
  return { startup: { starts: false, refusal: new LogError('ECORRUPT', `LSN ${bad.lsn}: ${bad.reason}`) }, history: undefined };
}

function verdictOf(judgement: DataDirectoryJudgement, repairable: boolean): Verdict {
  if (!judgement.startup.starts) return 'damaged';
  if ((judgement.history?.damage.length ?? 0) > 0) return 'degraded';
  return repairable ? 'recoverable' : 'healthy';
}

function verdictLine(verdict: Verdict, judgement: DataDirectoryJudgement): string {
  switch (verdict) {
    case 'healthy': return 'healthy: every checksum and the LSN chain are intact';
    case 'recoverable': return 'recoverable: the broker starts and repairs this on its own (exit code 1)';
    case 'degraded': return `degraded: the broker starts (replay reads only from LSN ${judgement.startup.starts ? judgement.startup.replayFromLsn : '?'} on) and reports this: ${judgement.history?.summary ?? ''} (exit code 1)`;
    case 'damaged': return `damaged: the broker will refuse to start: ${judgement.startup.starts ? '' : judgement.startup.refusal.message} (exit code 1)`;
  }
}
