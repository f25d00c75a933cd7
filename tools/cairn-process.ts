/**
 * Runs `cairn serve` (the built dist/src/cli.js) as a child process, for crash
 * tests and benchmarks: ports are picked by the OS (port 0) and read back from
 * the JSON start-up line; kill() is a real SIGKILL, stop() a graceful SIGTERM.
 * runCairnCommand runs any other `cairn` command to its end.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// Always the built CLI: from dist/tools when compiled, from tools/ when a test imports this source file.
const here = import.meta.dirname;
const cli = here.endsWith(join('dist', 'tools')) ? resolve(here, '../src/cli.js') : resolve(here, '../dist/src/cli.js');
const startTimeoutMs = 15_000;
/** Log lines kept for the caller; beyond this the pipe is still drained, so logging never blocks the broker. */
const outputLinesMax = 2000;

export interface CairnProcess {
  readonly child: ChildProcess;
  readonly mqttPort: number;
  readonly amqpPort: number;
  readonly httpPort: number;
  /** Log lines (stdout JSON lines and stderr chunks), the first outputLinesMax of them. */
  readonly output: string[];
  /** Resolves when the process has exited, with its exit code or the signal that ended it. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(): Promise<void>;
  stop(): Promise<void>;
}

export function tempDataDir(prefix = 'cairn-'): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Starts `cairn serve --data dataDir` with every listener on port 0; `extraArgs` override (e.g. `--http-port off`);
 * `env` adds environment variables (e.g. a CAIRN_TEST_HOOK_*); `readyTimeoutMs` bounds the wait for the ready line
 * (a restart on a large data directory replays for longer than the default). `output` collects the log lines from
 * the start, before the process is ready (a standby waits for its writer lease before it is).
 */
export function startCairnProcess(
  dataDir: string,
  extraArgs: readonly string[] = [],
  env: Readonly<Record<string, string>> = {},
  readyTimeoutMs = startTimeoutMs,
  output: string[] = [],
): Promise<CairnProcess> {
  const child = spawn(process.execPath, [cli, 'serve', '--data', dataDir, '--mqtt-port', '0', '--amqp-port', '0', '--http-port', '0', ...extraArgs], {
    env: { ...process.env, CAIRN_LOG_FORMAT: 'json', CAIRN_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const keep = (line: string): void => { if (output.length < outputLinesMax) output.push(line); };
  const exitStatus = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.once('exit', (code, signal) => done({ code, signal })));
  const exited = exitStatus.then(() => undefined);
  return new Promise((resolvePromise, reject) => {
    let buffered = '';
    let ready = false;
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`cairn did not start within ${readyTimeoutMs} ms:\n${output.join('\n')}`)); }, readyTimeoutMs);
    child.stderr!.on('data', (chunk: Buffer) => keep(chunk.toString()));
    const exitedEarly = (code: number | null): void => { clearTimeout(timer); reject(new Error(`cairn exited with ${code} before it was ready:\n${output.join('\n')}`)); };
    child.once('exit', exitedEarly);
    child.stdout!.on('data', (chunk: Buffer) => {
      if (output.length >= outputLinesMax) return;
      buffered += chunk.toString();
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        keep(line);
        if (ready) continue;
        let entry: { msg?: string; mqtt?: number | string; amqp?: number | string; http?: number | string };
        try { entry = JSON.parse(line) as typeof entry; } catch { continue; }
        if (!entry.msg?.includes(' ready')) continue;
        ready = true;
        clearTimeout(timer);
        child.off('exit', exitedEarly);
        resolvePromise({
          child, output, exited: exitStatus,
          mqttPort: Number(entry.mqtt), amqpPort: Number(entry.amqp), httpPort: Number(entry.http),
          kill: async () => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); await exited; },
          stop: () => stopChild(child, exited),
        });
      }
    });
  });
}

/**
 * Runs `cairn <args>` to its end (inspect, recover, or a serve that is expected to refuse); a command still
 * running after `timeoutMs` is killed (SIGKILL) and reported with code null.
 */
export function runCairnCommand(args: readonly string[], timeoutMs = startTimeoutMs): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [cli, ...args], { env: { ...process.env, CAIRN_LOG_FORMAT: 'json' }, stdio: ['ignore', 'pipe', 'pipe'] });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolvePromise, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') });
    });
  });
}

/** SIGTERM, then SIGKILL if the child is still there after 5 s. */
export async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}
