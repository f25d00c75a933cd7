/**
 * Damage to a data directory, judged the same way by `cairn inspect verify`
 * and by the broker's start-up (the decision table in src/log/recovery.ts):
 *
 * - a flipped byte in a sealed segment that the newest snapshot covers, and a
 *   deleted middle segment: replay does not need them, so the broker starts,
 *   then its background check reports the LSNs that can no longer be restored
 *   (an error log line, a metric, /api/overview); verify says exactly that;
 *   `recover --lsn` before the damage succeeds, inside it fails and removes
 *   the directory it created;
 * - a deleted newest segment that held the newest snapshot's LSN: the broker
 *   refuses to start with a message naming the override, verify says the same
 *   message; with the override the broker starts from the snapshot and
 *   reports the lost range.
 *
 * The data directory is written by a real Broker on a real SegmentedLog; the
 * broker is started with startCairn, the same path as `cairn serve`.
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../src/config.js';
import { openLogReader, SegmentedLog, type SegmentInfo } from '../../src/log/index.js';
import { metricNames } from '../../src/metrics.js';
import { startCairn, type RunningCairn } from '../../src/server.js';
import { inspect, recover, type Run } from '../support/cli-run.js';
import { tempDirectory, until } from '../support/kit.js';
import { WorkloadDriver } from '../support/inspect-workload.js';

const verify = (dir: string): Promise<Run> => inspect('verify', '--data', dir);
const recoverTo = (from: string, to: string, lsn: number): Promise<Run> => recover('--from', from, '--to', to, '--lsn', String(lsn));

const segmentBytes = 4096;
const root = tempDirectory('cairn-log-damage-');
const pristine = join(root.path, 'pristine');
let segments: SegmentInfo[];
let snapshotLsn: number;
let lastLsn: number;

/** Sealed segments, several records each, all before a snapshot that lies in the last segment; records after it. */
beforeAll(async () => {
  const w = await WorkloadDriver.open(pristine, { log: { segmentBytesMax: segmentBytes } });
  await w.connect('sub');
  await w.subscribe('sub', 't/#', 1);
  await w.connect('pub');
  let round = 0;
  const publish = async (): Promise<void> => {
    round++;
    await w.publish('pub', `t/${round % 7}`, `message ${round} ${'x'.repeat(60)}`, 1, false, (round % 60000) + 1);
    if (round % 5 === 0) await w.pubackAll('sub');
  };
  for (let i = 0; i < 120; i++) await publish();
  // Snapshot where the last segment already holds a few records, then a few more after it.
  while (w.log.segments().at(-1)!.lastLsn < w.log.segments().at(-1)!.firstLsn + 2) await publish();
  await w.snapshot();
  snapshotLsn = w.broker.state.lastLsn;
  for (let i = 0; i < 3; i++) await publish();
  lastLsn = w.broker.state.lastLsn;
  segments = w.log.segments();
  await w.close();
  expect(segments.length).toBeGreaterThan(5);
  expect(segments.at(-1)!.firstLsn).toBeLessThanOrEqual(snapshotLsn);
  expect(segments.at(-1)!.lastLsn).toBeGreaterThan(snapshotLsn);
});

afterAll(() => root.remove());

function copyOf(name: string): string {
  const dir = join(root.path, name);
  fs.cpSync(pristine, dir, { recursive: true });
  return dir;
}

function flipByte(path: string, offset: number): void {
  const bytes = fs.readFileSync(path);
  bytes[offset] = bytes[offset]! ^ 0x5a;
  fs.writeFileSync(path, bytes);
}

interface Started {
  readonly cairn: RunningCairn;
  readonly lines: Array<Record<string, unknown>>;
}

async function startBroker(dir: string, extraArgs: string[] = []): Promise<Started> {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  const config = parseServeArgs(['--data', dir, '--mqtt-port', '0', '--amqp-port', '0', '--http-port', '0', '--bind', '127.0.0.1', '--segment-bytes', String(segmentBytes), ...extraArgs], {});
  const cairn = await startCairn(config, logger);
  return { cairn, lines };
}

async function startRefused(dir: string, extraArgs: string[] = []): Promise<Error> {
  return startBroker(dir, extraArgs).then(
    async (started) => {
      await started.cairn.close();
      throw new Error('the broker started');
    },
    (error: unknown) => error as Error,
  );
}

async function overviewHistory(cairn: RunningCairn): Promise<Record<string, unknown>> {
  const response = await fetch(`http://127.0.0.1:${cairn.httpPort}/api/overview`);
  const overview = (await response.json()) as { cairn: { log: { history: Record<string, unknown> } } };
  return overview.cairn.log.history;
}

async function metric(cairn: RunningCairn, name: string): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${cairn.httpPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

/** Starts the broker on a directory whose history (before the snapshot) is damaged, and checks every report of it. */
async function expectStartsAndReports(dir: string, unrestorable: { firstLsn: number; lastLsn: number }, nextLsn = lastLsn + 1): Promise<void> {
  const range = `LSN ${unrestorable.firstLsn}..${unrestorable.lastLsn}`;
  const { cairn, lines } = await startBroker(dir);
  try {
    expect(cairn.log.nextLsn).toBe(nextLsn);
    await until(() => lines.some((l) => l['level'] === 50 && String(l['msg']).includes(range)), `an error line naming ${range}`);
    const error = lines.find((l) => l['level'] === 50)!;
    expect(String(error['msg'])).toContain(`point-in-time recovery is impossible for ${range}`);
    expect(error['unrestorable']).toEqual([unrestorable]);
    expect(await metric(cairn, metricNames.logDamagedSegments)).toBe(1);
    expect(await metric(cairn, metricNames.logUnrestorableLsns)).toBe(unrestorable.lastLsn - unrestorable.firstLsn + 1);
    const history = await overviewHistory(cairn);
    expect(history).toMatchObject({ state: 'damaged', unrestorable: [unrestorable] });
    expect(String(history['summary'])).toContain(range);
  } finally {
    await cairn.close();
  }
}

async function expectRecoverBeforeDamage(dir: string, lsn: number): Promise<void> {
  const target = join(root.path, `${fs.readdirSync(root.path).length}-recovered-before`);
  const r = await recoverTo(dir, target, lsn);
  expect(r.err).toBe('');
  expect(r.code).toBe(0);
  const log = await SegmentedLog.open({ dir: target });
  expect(log.nextLsn).toBe(lsn + 1);
  await log.close();
}

async function expectRecoverInsideDamageFailsCleanly(dir: string, lsn: number): Promise<void> {
  const target = join(root.path, `${fs.readdirSync(root.path).length}-recovered-inside`);
  const r = await recoverTo(dir, target, lsn);
  expect(r.code).toBe(1);
  expect(r.err).toContain(`cannot recover to LSN ${lsn}`);
  expect(r.err.trim().split('\n')).toHaveLength(1);
  expect(fs.existsSync(target)).toBe(false);
}

interface HistoryDamageCase {
  readonly name: string;
  /** Damages the copy; returns the LSNs that cannot be read, a line verify prints about them, and LSNs to recover to. */
  readonly damage: (dir: string) => { readonly unreadable: { firstLsn: number; lastLsn: number }; readonly detail: string; readonly before: number; readonly inside: number };
}

const historyDamageCases: readonly HistoryDamageCase[] = [
  {
    name: 'a flipped byte in a sealed segment covered by the newest snapshot',
    damage: (dir) => {
      const damaged = segments[2]!;
      // The first record's kind byte: that record fails its checksum, the next one is intact.
      flipByte(join(dir, damaged.file), 32 + 28);
      return { unreadable: { firstLsn: damaged.firstLsn, lastLsn: damaged.firstLsn }, detail: `BAD RECORD segment ${damaged.file} LSN ${damaged.firstLsn}`, before: damaged.firstLsn - 1, inside: damaged.firstLsn + 1 };
    },
  },
  {
    name: 'a deleted middle segment covered by the newest snapshot',
    damage: (dir) => {
      const deleted = segments[3]!;
      fs.unlinkSync(join(dir, deleted.file));
      // Right before the hole: recover must not read past its target into it.
      return { unreadable: { firstLsn: deleted.firstLsn, lastLsn: deleted.lastLsn }, detail: `LSN ${deleted.firstLsn}..${deleted.lastLsn} are missing`, before: deleted.firstLsn - 1, inside: deleted.lastLsn };
    },
  },
];

describe.each(historyDamageCases)('$name', ({ name, damage }) => {
  let dir: string;
  let found: ReturnType<HistoryDamageCase['damage']>;
  let unrestorable: { firstLsn: number; lastLsn: number };

  beforeAll(() => {
    dir = copyOf(name.replaceAll(' ', '-'));
    found = damage(dir);
    unrestorable = { firstLsn: found.unreadable.firstLsn, lastLsn: snapshotLsn - 1 };
  });

  it('verify: exit 1, the broker starts, and names the LSNs that can no longer be restored', async () => {
    const r = await verify(dir);
    expect(r.code).toBe(1);
    expect(r.out).toContain(found.detail);
    expect(r.out).toContain(`DAMAGED HISTORY segment`);
    expect(r.out).toContain(`LSN ${found.unreadable.firstLsn}..${found.unreadable.lastLsn}: `);
    expect(r.out).toContain(`point-in-time recovery is impossible for LSN ${unrestorable.firstLsn}..${unrestorable.lastLsn}`);
    expect(r.out).toContain('the broker starts');
    expect(r.out).not.toContain('refuse');
  });

  it('the broker starts, then reports the damage in an error line, a metric and /api/overview', async () => {
    await expectStartsAndReports(dir, unrestorable);
  });

  it('recover --lsn before the damage succeeds; inside it fails and removes the target directory', async () => {
    await expectRecoverBeforeDamage(dir, found.before);
    await expectRecoverInsideDamageFailsCleanly(dir, found.inside);
  });
});

describe('a deleted newest segment that held the newest snapshot\'s LSN', () => {
  let dir: string;
  let end: number;

  beforeAll(() => {
    dir = copyOf('no-newest');
    fs.unlinkSync(join(dir, segments.at(-1)!.file));
    end = segments.at(-2)!.lastLsn;
  });

  it('verify and start-up refuse with the same message, which names the lost range and the override', async () => {
    const r = await verify(dir);
    expect(r.code).toBe(1);
    expect(r.out).toContain('the broker will refuse to start');
    const refused = await startRefused(dir);
    expect(refused.message).toContain(`the log ends at LSN ${end}`);
    expect(refused.message).toContain(`newest valid snapshot covers LSN ${snapshotLsn}`);
    expect(refused.message).toContain(`--accept-lost-records-after ${end}`);
    expect(r.out).toContain(refused.message);
    // Refusing leaves the directory as it was.
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.seg'))).toEqual(segments.slice(0, -1).map((s) => s.file));
  });

  it('the override must name the LSN the log ends at', async () => {
    const refused = await startRefused(dir, ['--accept-lost-records-after', String(end - 1)]);
    expect(refused.message).toContain(`the log ends at LSN ${end}, not ${end - 1}`);
  });

  it('recover --lsn before the loss succeeds; a lost LSN is refused and nothing is created', async () => {
    await expectRecoverBeforeDamage(dir, end);
    const target = join(root.path, 'never-lost');
    const r = await recoverTo(dir, target, end + 1);
    expect(r.code).toBe(2);
    expect(fs.existsSync(target)).toBe(false);
  });

  it('with the override the broker starts from the snapshot, says what was lost, and reports the lost range from then on', async () => {
    const { cairn, lines } = await startBroker(dir, ['--accept-lost-records-after', String(end)]);
    let unrestorable: { firstLsn: number; lastLsn: number };
    try {
      expect(cairn.log.nextLsn).toBe(snapshotLsn + 1);
      expect(cairn.broker.state.lastLsn).toBe(snapshotLsn);
      const override = lines.find((l) => String(l['msg']).includes('--accept-lost-records-after'));
      expect(override?.['level']).toBe(50);
      expect(String(override?.['msg'])).toContain(`records after LSN ${snapshotLsn}`);
      unrestorable = { firstLsn: end + 1, lastLsn: snapshotLsn - 1 };
      await until(async () => (await overviewHistory(cairn))['state'] === 'damaged', 'the history check to report the lost range');
      expect(await overviewHistory(cairn)).toMatchObject({ unrestorable: [unrestorable] });
    } finally {
      await cairn.close();
    }
    // From now on the directory is a log with a damaged history: verify and start-up agree that it starts.
    const r = await verify(dir);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`point-in-time recovery is impossible for LSN ${unrestorable.firstLsn}..${unrestorable.lastLsn}`);
    await expectStartsAndReports(dir, unrestorable, snapshotLsn + 1);
  });
});

describe('an intact directory', () => {
  it('verify says healthy, the broker starts and its history check finds nothing', async () => {
    const dir = copyOf('intact');
    const r = await verify(dir);
    expect(r.code).toBe(0);
    expect(r.out).toContain('healthy');
    const { cairn, lines } = await startBroker(dir);
    try {
      await until(async () => (await overviewHistory(cairn))['state'] === 'intact', 'the history check to finish');
      expect(await metric(cairn, metricNames.logDamagedSegments)).toBe(0);
      expect(lines.filter((l) => Number(l['level']) >= 50)).toEqual([]);
      expect(openLogReader(dir).verify().ok).toBe(true);
    } finally {
      await cairn.close();
    }
  });
});
