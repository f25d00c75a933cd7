/**
 * The backlog benchmark's report: one table per broker (Cairn's with issue
 * 12's targets and PASS/MISS beside each figure), then the Cairn/RabbitMQ
 * ratios. A target is a figure to print, never a reason to fail the run.
 */
import type { CairnRecords } from './backlog-brokers.js';
import { confirmWindow, drainPrefetch, sliceMessages, type DrainResult, type FillResult } from './backlog-workload.js';
import { percentile } from './bench-side-by-side.js';
import { fmt, printTable } from './bench-mqtt.js';

const rssAfterFillTargetBytes = 300e6;
const slowestSliceTargetOfMedian = 0.5;
const dataDirTargetOfRecords = 1.3;
const restartTargetSeconds = 2;
const drainTargetOfRabbit = 2;

/** What one broker's phases measured, filled in phase by phase (a failed phase leaves the rest out). */
export interface BacklogPhases {
  fill?: FillResult;
  afterFill?: { readonly rss: number | undefined; readonly dataDirBytes: number; readonly counts: readonly number[]; readonly records: CairnRecords | undefined };
  restart?: { readonly seconds: number; readonly acceptingSeconds: number; readonly counts: number[]; readonly complete: boolean; readonly rss: number | undefined };
  drain?: DrainResult;
}

export interface BacklogResults extends BacklogPhases { readonly name: string }

export interface BacklogWorkload { readonly messages: number; readonly bodyBytes: number; readonly queues: number }

const megabytes = (bytes: number | undefined): string => (bytes === undefined ? '-' : `${fmt(bytes / 1e6, 1)} MB`);
const rate = (value: number | undefined): string => (value === undefined || !Number.isFinite(value) ? '-' : `${Math.round(value).toLocaleString('en-US')} msg/s`);
const verdict = (met: boolean | undefined): string => (met === undefined ? 'n/a' : met ? 'PASS' : 'MISS');
const ratio = (a: number | undefined, b: number | undefined): string => (a === undefined || b === undefined || !(b > 0) ? '-' : `${fmt(a / b)}x`);

function medianSlice(fill: FillResult | undefined): number | undefined {
  if (fill === undefined || fill.sliceRates.length === 0) return undefined;
  return percentile([...fill.sliceRates].sort((a, b) => a - b), 50);
}
const slowestSlice = (fill: FillResult | undefined): number | undefined => (fill === undefined || fill.sliceRates.length === 0 ? undefined : Math.min(...fill.sliceRates));
const drainRate = (r: BacklogResults): number | undefined => (r.drain === undefined ? undefined : r.drain.received / r.drain.seconds);
const restartSeconds = (r: BacklogResults): number | undefined => (r.restart?.complete === true ? r.restart.seconds : undefined);

function restartCell(r: BacklogResults): string {
  const restart = r.restart;
  if (restart === undefined) return '-';
  const accepting = `accepting connections after ${fmt(restart.acceptingSeconds, 2)} s`;
  if (!restart.complete) return `not back after ${fmt(restart.seconds, 1)} s (counts ${restart.counts.join('/')}; ${accepting})`;
  return `${fmt(restart.seconds, 2)} s (${accepting})`;
}

/** Rows of one broker's table: figure, value, and for Cairn the target and PASS/MISS. */
function brokerRows(r: BacklogResults, workload: BacklogWorkload, rabbit: BacklogResults | undefined): string[][] {
  const withTargets = r.name === 'Cairn';
  const target = (text: string, met: boolean | undefined): string[] => (withTargets ? [text, verdict(met)] : ['', '']);
  const payloadBytes = workload.messages * workload.bodyBytes;
  const median = medianSlice(r.fill);
  const slowest = slowestSlice(r.fill);
  const records = r.afterFill?.records;
  const dataDir = r.afterFill?.dataDirBytes;
  const rows: string[][] = [[`${r.name}`, 'value', withTargets ? 'target (issue 12)' : '', withTargets ? 'verdict' : '']];
  rows.push(['fill, whole run', r.fill === undefined ? '-' : `${r.fill.confirmed.toLocaleString('en-US')} in ${fmt(r.fill.seconds, 1)} s = ${rate(r.fill.confirmed / r.fill.seconds)}`, '', '']);
  rows.push([`fill, median ${sliceMessages / 1000}k slice`, rate(median), '', '']);
  rows.push([`fill, slowest ${sliceMessages / 1000}k slice`, slowest === undefined || median === undefined ? '-' : `${rate(slowest)} (${fmt(slowest / median)}x the median)`,
    ...target(`>= ${slowestSliceTargetOfMedian}x the median`, slowest === undefined || median === undefined ? undefined : slowest >= slowestSliceTargetOfMedian * median)]);
  rows.push(['RSS after fill', megabytes(r.afterFill?.rss), ...target(`<= ${megabytes(rssAfterFillTargetBytes)}`, r.afterFill?.rss === undefined ? undefined : r.afterFill.rss <= rssAfterFillTargetBytes)]);
  if (withTargets) {
    const recordBytes = records?.recordBytes;
    rows.push(['data directory after fill (all files)', dataDir === undefined ? '-' : `${megabytes(dataDir)} (${ratio(dataDir, recordBytes)} the records)`,
      ...target(`<= ${dataDirTargetOfRecords}x the records`, dataDir === undefined || recordBytes === undefined ? undefined : dataDir <= dataDirTargetOfRecords * recordBytes)]);
    rows.push(['  records in segments', records?.recordBytes === undefined ? `- (${records?.inspectError ?? 'not measured'})` : `${megabytes(records.recordBytes)} (${(records.records ?? 0).toLocaleString('en-US')} records)`, '', '']);
    rows.push(['  segment files (with zero-filled lead)', records === undefined ? '-' : `${megabytes(records.segmentFileBytes)} in ${records.segmentFiles} files`, '', '']);
    rows.push(['  snapshot files', records === undefined ? '-' : `${megabytes(records.snapshotBytes)} in ${records.snapshotFiles} files`, '', '']);
  } else {
    rows.push(['mnesia directory after fill', megabytes(dataDir), '', '']);
  }
  rows.push(['  against the payload bytes', `${ratio(dataDir, payloadBytes)} of ${megabytes(payloadBytes)}`, '', '']);
  rows.push(['restart (SIGKILL -> every queue at its count)', restartCell(r), ...target(`<= ${restartTargetSeconds} s`, r.restart === undefined ? undefined : r.restart.complete && r.restart.seconds <= restartTargetSeconds)]);
  rows.push(['RSS after restart', megabytes(r.restart?.rss), '', '']);
  const drain = drainRate(r);
  const rabbitDrain = rabbit === undefined ? undefined : drainRate(rabbit);
  const drainCell = r.drain === undefined ? '-' : `${rate(drain)} (${r.drain.received.toLocaleString('en-US')} in ${fmt(r.drain.seconds, 1)} s${r.drain.wrongSize > 0 ? `, ${r.drain.wrongSize} of the wrong size` : ''})`;
  rows.push([`drain, ${workload.queues} consumers`, drainCell, ...target(`>= ${drainTargetOfRabbit}x RabbitMQ${rabbitDrain === undefined ? '' : ` (${rate(drainTargetOfRabbit * rabbitDrain)})`}`, drain === undefined || rabbitDrain === undefined ? undefined : drain >= drainTargetOfRabbit * rabbitDrain)]);
  return rows;
}

function ratioRows(cairn: BacklogResults, rabbit: BacklogResults): string[][] {
  const rows: string[][] = [['figure', 'Cairn', 'RabbitMQ', 'Cairn/RabbitMQ']];
  const row = (label: string, pick: (r: BacklogResults) => number | undefined, show: (value: number | undefined) => string): void => {
    rows.push([label, show(pick(cairn)), show(pick(rabbit)), ratio(pick(cairn), pick(rabbit))]);
  };
  const seconds = (value: number | undefined): string => (value === undefined ? '-' : `${fmt(value, 2)} s`);
  row(`fill, median ${sliceMessages / 1000}k slice`, (r) => medianSlice(r.fill), rate);
  row(`fill, slowest ${sliceMessages / 1000}k slice`, (r) => slowestSlice(r.fill), rate);
  row('fill, whole run', (r) => (r.fill === undefined ? undefined : r.fill.confirmed / r.fill.seconds), rate);
  row('RSS after fill', (r) => r.afterFill?.rss, megabytes);
  row('data (Cairn: data directory; RabbitMQ: mnesia)', (r) => r.afterFill?.dataDirBytes, megabytes);
  row('restart (SIGKILL -> every queue at its count)', restartSeconds, seconds);
  row('RSS after restart', (r) => r.restart?.rss, megabytes);
  row('drain', drainRate, rate);
  return rows;
}

export function printBacklogReport(workload: BacklogWorkload, results: readonly BacklogResults[]): void {
  const cairn = results.find((r) => r.name === 'Cairn');
  const rabbit = results.find((r) => r.name === 'RabbitMQ');
  console.log(`\nbacklog: ${workload.messages.toLocaleString('en-US')} persistent messages of ${workload.bodyBytes} B into ${workload.queues} durable queues; fill: ${workload.queues} publishers (one connection and queue each), confirm window ${confirmWindow} each; drain: ${workload.queues} consumers, prefetch ${drainPrefetch}, one basic.ack per message (no multiple acks).`);
  for (const r of results) {
    console.log('');
    printTable(brokerRows(r, workload, rabbit));
    const slices = r.fill?.sliceRates.map((value) => Math.round(value).toLocaleString('en-US')).join(' ');
    if (slices !== undefined) console.log(`${r.name} fill slices (msg/s, ${sliceMessages.toLocaleString('en-US')} confirms each): ${slices === '' ? 'none (fewer confirms than one slice)' : slices}`);
    const counts = r.afterFill?.counts;
    if (counts !== undefined) console.log(`${r.name} queue counts after fill: ${counts.join(' / ')}`);
  }
  if (cairn !== undefined && rabbit !== undefined) {
    console.log('');
    printTable(ratioRows(cairn, rabbit));
    console.log('Rates: ratio > 1 means Cairn faster; RSS, bytes and restart: ratio > 1 means Cairn bigger or slower.');
  }
  console.log(`RSS: VmRSS of the broker process (Cairn: node; RabbitMQ: beam.smp). Bytes: apparent file sizes (du -sb). Restart: from SIGKILL until queue.declare passive shows every queue at its count before the kill (polled every few ms).`);
}
