/**
 * The bare PUBACK servers bench.js mqtt measures beside the brokers, each run
 * as its own process that prints `{"port":N}` when it listens: the Node one
 * (bare-puback-server.ts) and the C one (bare-puback-server.c), which is
 * compiled here on demand with the machine's `cc`. A machine without a
 * compiler measures no C floor, and says why, rather than failing the bench.
 */
import { spawn, spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { stopChild } from './cairn-process.js';

// The C source stays in tools/ (tsc copies no .c): found from dist/tools when compiled, beside this file when a test imports it.
const here = import.meta.dirname;
export const bareCServerSource = here.endsWith(join('dist', 'tools')) ? resolve(here, '../../tools/bare-puback-server.c') : resolve(here, 'bare-puback-server.c');

const compilerInstallHint = 'apt-get install gcc libc6-dev';

/** The compiled C server, or why there is none (no `cc`, or it failed). */
export type BareCServerBuild = { readonly binary: string; readonly warnings: string } | { readonly notMeasured: string };

/** Compiles bare-puback-server.c into `directory` with `cc -O2` (warnings on: the source is kept clean of them). */
export function compileBareCServer(directory: string): BareCServerBuild {
  const binary = join(directory, 'bare-puback-server');
  const compiled = spawnSync('cc', ['-O2', '-Wall', '-Wextra', '-pthread', '-o', binary, bareCServerSource], { encoding: 'utf8' });
  if (compiled.error !== undefined) {
    const reason = (compiled.error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no cc on PATH' : `cc did not run: ${compiled.error.message}`;
    return { notMeasured: `${reason} (${compilerInstallHint})` };
  }
  if (compiled.status !== 0) {
    const firstError = compiled.stderr.split('\n').find((line) => line.includes('error')) ?? `exit status ${compiled.status}`;
    return { notMeasured: `cc failed: ${firstError.trim()} (${compilerInstallHint})` };
  }
  return { binary, warnings: compiled.stderr };
}

export interface BareServerProcess { readonly port: number; readonly pid: number | undefined; stop(): Promise<void> }

/**
 * Runs `command args` (a bare server), `env` added to this process's environment, and resolves with the port from
 * the line it prints when it listens.
 */
export async function startBareServerProcess(command: string, args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<BareServerProcess> {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const line = await new Promise<string>((resolvePromise, reject) => {
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      if (buffered.includes('\n')) resolvePromise(buffered.slice(0, buffered.indexOf('\n')));
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${command} ${args.join(' ')} exited with ${code} before it was ready`)));
  });
  return { port: (JSON.parse(line) as { port: number }).port, pid: child.pid, stop: () => stopChild(child, exited) };
}
