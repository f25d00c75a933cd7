/**
 * `inspect records --follow` prints records appended by a live broker after it
 * started, by polling the offline reader, until stopped.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { runInspect } from '../../src/inspect/index.js';
import { WorkloadDriver } from '../support/inspect-workload.js';

it('inspect records --follow keeps printing new records until stopped', async () => {
  const dir = fs.mkdtempSync(join(os.tmpdir(), 'cairn-inspect-follow-'));
  try {
    const w = await WorkloadDriver.open(dir);
    await w.declareQueue('q1');
    const stdout = new PassThrough();
    let out = '';
    stdout.on('data', (c: Buffer) => { out += c.toString('utf8'); });
    const controller = new AbortController();
    const running = runInspect(['records', '--data', dir, '--follow', '--queue', 'q1'], { stdout, stderr: new PassThrough(), isTTY: false, signal: controller.signal });
    await sleep(100);
    expect(out).toContain('queue=q1 declare');
    await w.amqpPublish('', 'q1', 'later');
    await sleep(600);
    expect(out).toContain('"later"');
    controller.abort();
    expect(await running).toBe(0);
    await w.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
