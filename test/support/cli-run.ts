/**
 * Runs `cairn inspect` / `cairn recover` in-process with captured output, as
 * the CLI would: the exit code and everything written to stdout and stderr.
 */
import { PassThrough } from 'node:stream';
import { runInspect, runRecover } from '../../src/inspect/index.js';

export interface Run { code: number; out: string; err: string }

async function capture(run: (io: { stdout: PassThrough; stderr: PassThrough; isTTY: boolean }) => Promise<number>): Promise<Run> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on('data', (c: Buffer) => out.push(c));
  stderr.on('data', (c: Buffer) => err.push(c));
  const code = await run({ stdout, stderr, isTTY: false });
  return { code, out: Buffer.concat(out).toString('utf8'), err: Buffer.concat(err).toString('utf8') };
}

export const inspect = (...args: string[]): Promise<Run> => capture((io) => runInspect(args, io));
export const recover = (...args: string[]): Promise<Run> => capture((io) => runRecover(args, io));
