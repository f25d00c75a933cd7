/**
 * The per-stage table of a broker's round trips (issue 18): the broker, run
 * with CAIRN_STAGE_TIMING=FILE (src/stage-timing.ts), writes at exit the p50
 * of each stage's time since the previous one, for its durable and its
 * non-durable sequential round trips; this turns that file into table rows.
 * The stages between "sync submitted" and "sync done" run on libuv's thread
 * pool (the hand-off, the fdatasync, the wake-up of the event loop); every
 * other stage is event-loop time (CPU or waiting for one).
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import { busyNames, Stage, stageNames, stageTimingVariable, type StageReport, type StageSummary } from '../src/stage-timing.js';
import { fmt } from './bench-mqtt.js';

/** The environment that turns stage timing on for the process `name`, and where its report will be (in `dir`). */
export function stageTimingEnvironment(dir: string, name: string): { env: Record<string, string>; file: string } {
  const file = join(dir, `${name}-stage-timing.json`);
  return { env: { [stageTimingVariable]: file }, file };
}

/** The report the broker wrote at exit; undefined when it wrote none (killed, or an older build). */
export function readStageReport(file: string): StageReport | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as StageReport;
  } catch {
    return undefined;
  }
}

/**
 * Rows: one per stage, p50 (mean) µs since the previous stage, non-durable and durable side by side, the
 * durable case's p99 of each stage, then its slowest 1% of round trips: each stage's mean over them (where
 * its p99 comes from) and how many of them overlapped a GC, a zero fill, a snapshot. With `rawP99Ms` (the
 * raw disk's write+fdatasync p99 on the calling thread, sampled in alternation) a row sets the broker's own
 * fdatasync tail beside the disk's. With `bare` (the bare durable Node server's durable round trips, timed the
 * same way in the same minutes: its stages are read, decoded, sync submitted -> sync done around its one O_DSYNC
 * pwrite, resolved, ack written) three more columns give its p50 (mean), p99 and slowest-1% mean, and a row sets
 * Cairn's sync stage p99 beside its pwrite's: whether Cairn's tail is in the write or around it.
 */
export function stageRows(report: StageReport, rawP99Ms?: number, bare?: StageSummary): string[][] {
  const cell = (summary: StageSummary, stage: number): string => {
    const p50 = summary.p50Us[stage];
    const mean = summary.meanUs[stage];
    return p50 === null || p50 === undefined ? '' : `${fmt(p50, 1)} (${fmt(mean ?? Number.NaN, 1)})`;
  };
  // Older reports (a build before these columns) have no slowest-1% means, no p99 per stage, no overlaps.
  const pick = (values: ReadonlyArray<number | null> | undefined, stage: number): string => {
    const value = values?.[stage];
    return value === null || value === undefined ? '' : fmt(value, 1);
  };
  const durable = report.durable;
  const total = (summary: StageSummary): string => `${fmt(summary.totalP50Us, 1)} / ${fmt(summary.totalP99Us ?? Number.NaN, 1)}`;
  // The bare server's columns, or none; `cells` fills them for a row that has no figure there.
  const bareHeader = bare === undefined ? [] : ['bare durable Node', 'bare durable Node p99', 'bare durable Node, slowest 1%: mean'];
  const empty = bareHeader.map(() => '');
  const rows: string[][] = [['stage: us since the previous stage, p50 (mean)', 'no subscriber', 'offline persistent sub', 'offline persistent sub p99', 'offline persistent sub, slowest 1%: mean', ...bareHeader]];
  for (let stage = 1; stage < stageNames.length; stage++) {
    const bareCells = bare === undefined ? [] : [cell(bare, stage), pick(bare.p99Us, stage), pick(bare.tailMeanUs, stage)];
    rows.push([stageNames[stage]!, cell(report.nonDurable, stage), cell(durable, stage), pick(durable.p99Us, stage), pick(durable.tailMeanUs, stage), ...bareCells]);
  }
  rows.push(['read -> ack written, p50 / p99', total(report.nonDurable), total(durable), '', '', ...(bare === undefined ? [] : [total(bare), '', ''])]);
  rows.push(['round trips traced', String(report.nonDurable.traces), String(durable.traces), '', '', ...(bare === undefined ? [] : [String(bare.traces), '', ''])]);
  const note = (label: string, value: string): void => { rows.push([label, '', value, '', '', ...empty]); };
  // Older reports (a build before the sync lanes) have no such counts.
  if (report.loneSyncs !== undefined) note('lone batches synced on the event loop / thread pool (whole run)', `${report.loneSyncs.loop} / ${report.loneSyncs.pool}`);
  const syncP99 = durable.p99Us?.[Stage.syncDone];
  if (rawP99Ms !== undefined && syncP99 !== null && syncP99 !== undefined) {
    note("the broker's fdatasync p99 (sync submitted -> sync done) / the raw disk's write+fdatasync p99", `${fmt(syncP99 / 1000, 3)} ms / ${fmt(rawP99Ms, 3)} ms = ${fmt(syncP99 / 1000 / rawP99Ms)}`);
  }
  const bareSyncP99 = bare?.p99Us[Stage.syncDone];
  if (syncP99 !== null && syncP99 !== undefined && bareSyncP99 !== null && bareSyncP99 !== undefined) {
    note("the broker's fdatasync p99 / the bare durable Node server's O_DSYNC pwrite p99 (same minutes)", `${fmt(syncP99 / 1000, 3)} ms / ${fmt(bareSyncP99 / 1000, 3)} ms = ${fmt(syncP99 / bareSyncP99)}`);
  }
  if (durable.tailOverlaps !== undefined && durable.overlaps !== undefined) {
    const slowest = Math.ceil(durable.traces / 100);
    busyNames.forEach((name, kind) => {
      // A report from a build that noted fewer kinds has no count for the later ones.
      if (durable.tailOverlaps[kind] === undefined) return;
      note(`durable round trips that overlapped ${name}: of the slowest 1% / of all`, `${durable.tailOverlaps[kind]} of ${slowest} / ${durable.overlaps[kind]} of ${durable.traces}`);
    });
  }
  return rows;
}
