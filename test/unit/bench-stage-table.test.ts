/**
 * The stage table bench.js mqtt prints (tools/bench-stage-table.ts) and the bare
 * durable Node server's side of it (tools/bare-puback-server.ts): run as the bench
 * runs it, with CAIRN_STAGE_TIMING=FILE, the server times each durable round trip
 * with Cairn's stages and writes the report when it is stopped (SIGTERM); the table
 * sets its stages beside Cairn's, and Cairn's sync p99 beside its pwrite's.
 */
import { join } from 'node:path';
import mqtt from 'mqtt';
import { describe, expect, it } from 'vitest';
import { Stage, stageNames, stageTimingVariable, type StageReport, type StageSummary } from '../../src/stage-timing.js';
import { startBareServerProcess } from '../../tools/bare-server-process.js';
import { readStageReport, stageRows } from '../../tools/bench-stage-table.js';
import { tempDirectory } from '../support/kit.js';

const bareNodeServer = join(import.meta.dirname, '../../dist/tools/bare-puback-server.js');

/** A summary whose every stage took `us` (p50, mean, p99, slowest 1%), over `traces` round trips. */
function summary(us: number, traces: number): StageSummary {
  const perStage = stageNames.map((_, stage) => (stage === 0 ? null : us));
  return { traces, p50Us: perStage, meanUs: perStage, p99Us: perStage, tailMeanUs: perStage, totalP50Us: 9 * us, totalP99Us: 9 * us, tailOverlaps: [0, 0, 0], overlaps: [0, 0, 0] };
}

describe('bare durable Node server, stage-timed', () => {
  it('times each durable round trip with Cairn\'s stages and writes the report when stopped', async () => {
    const dir = tempDirectory('bare-stages-');
    const file = join(dir.path, 'stages.json');
    const server = await startBareServerProcess(process.execPath, [bareNodeServer, 'durable', join(dir.path, 'publishes')], { [stageTimingVariable]: file });
    try {
      const client = await mqtt.connectAsync({ host: '127.0.0.1', port: server.port, reconnectPeriod: 0, clientId: 'bare-stages' });
      for (let i = 0; i < 10; i++) await client.publishAsync('bench/stages', `payload-${i}`, { qos: 1 });
      await client.endAsync();
    } finally {
      await server.stop();
    }
    const report = readStageReport(file);
    dir.remove();
    expect(report?.durable.traces).toBe(10);
    expect(report?.nonDurable.traces).toBe(0);
    for (const stage of [Stage.decoded, Stage.syncSubmitted, Stage.syncDone, Stage.resolved, Stage.ackWritten]) expect(report?.durable.p50Us[stage]).toBeGreaterThanOrEqual(0);
    // Stages of Cairn's that it has not: none of their figures.
    for (const stage of [Stage.appended, Stage.routed, Stage.written, Stage.flushBegun]) expect(report?.durable.p50Us[stage]).toBeNull();
  });
});

describe('stageRows', () => {
  const cairn: StageReport = { durable: summary(300, 500), nonDurable: summary(100, 400), loneSyncs: { loop: 7, pool: 3 } };

  it('sets the bare durable Node server\'s columns beside Cairn\'s, and Cairn\'s sync p99 beside its pwrite\'s; without a bare report, none', () => {
    const rows = stageRows(cairn, 0.5, summary(150, 600));
    expect(rows[0]).toHaveLength(8);
    for (const row of rows) expect(row).toHaveLength(8);
    expect(rows[Stage.syncDone]!.slice(5)).toEqual(['150.0 (150.0)', '150.0', '150.0']);
    expect(rows.find((row) => row[0] === 'round trips traced')?.[5]).toBe('600');
    expect(rows.find((row) => row[0]!.includes('bare durable Node server\'s O_DSYNC pwrite p99'))?.[2]).toBe('0.300 ms / 0.150 ms = 2.00');
    const cairnOnly = stageRows(cairn, 0.5);
    for (const row of cairnOnly) expect(row).toHaveLength(5);
    expect(cairnOnly.some((row) => row[0]!.includes('bare'))).toBe(false);
  });
});
