/**
 * Starts and stops the benchmarks' monitoring load (bench-scraper.ts) as a
 * child process: the built dist/tools/bench-scraper.js with the broker's HTTP
 * port, so the scraper's requests and parsing run outside the process that
 * measures the broker, at the lowest CPU priority. Its stdout is one JSON
 * line per event, read in order.
 */
import { spawn } from 'node:child_process';
import { constants, setPriority } from 'node:os';
import { join, resolve } from 'node:path';
import type { ScraperTotals } from './bench-scraper.js';

// Always the built script: from dist/tools when compiled, from tools/ when a test imports this source file.
const here = import.meta.dirname;
const builtTools = here.endsWith(join('dist', 'tools')) ? here : resolve(here, '../dist/tools');
const script = resolve(builtTools, 'bench-scraper.js');
/** Declaring 1,000 queues through the API takes a few seconds on a loaded machine. */
const readyTimeoutMs = 120_000;
/** A round in progress ends within this even on a loaded machine. */
const replyTimeoutMs = 30_000;

export interface ScraperProcess {
  /** Its process id (tail-trace-scrape.ts names its threads in a scheduler trace). */
  readonly pid: number | undefined;
  /** Pauses the scraper once its round in progress is done; resolves with the rounds it has made so far. */
  pause(): Promise<number>;
  /** Resumes it with a round at once. */
  resume(): void;
  /** Stops the scraper (SIGTERM); resolves with what it did. */
  stop(): Promise<ScraperTotals>;
}

export function startScraperProcess(httpPort: number, queues: number): Promise<ScraperProcess> {
  const child = spawn(process.execPath, [script, String(httpPort), String(queues)], { stdio: ['pipe', 'pipe', 'pipe'] });
  // The lowest CPU priority: it stands in for a Prometheus on another machine (bench-scrape.ts), not for a neighbour of the broker.
  if (child.pid !== undefined) setPriority(child.pid, constants.priority.PRIORITY_LOW);
  const lines: string[] = [];
  let read = 0;
  let stderr = '';
  let buffered = '';
  const waiters: Array<() => void> = [];
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    lines.push(...parts.filter((line) => line.trim() !== ''));
    for (const wake of waiters.splice(0)) wake();
  });
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => { for (const wake of waiters.splice(0)) wake(); done(code); }));
  /** The scraper's next JSON line, or an error naming its stderr once it exited or timed out. */
  const nextLine = async (timeoutMs: number, what: string): Promise<unknown> => {
    const deadline = Date.now() + timeoutMs;
    while (lines.length <= read) {
      if (child.exitCode !== null || child.signalCode !== null || Date.now() >= deadline) {
        child.kill('SIGKILL');
        throw new Error(`the scraper process ${child.exitCode !== null || child.signalCode !== null ? 'exited' : 'timed out'} before ${what}: ${stderr.trim()}`);
      }
      await new Promise<void>((wake) => {
        waiters.push(wake);
        setTimeout(wake, 500);
      });
    }
    return JSON.parse(lines[read++]!) as unknown;
  };
  return nextLine(readyTimeoutMs, 'declaring its queues').then(() => ({
    pid: child.pid,
    pause: async () => {
      child.stdin.write('pause\n');
      return (await nextLine(replyTimeoutMs, 'pausing') as { paused: number }).paused;
    },
    resume: () => { child.stdin.write('resume\n'); },
    stop: async () => {
      child.kill('SIGTERM');
      const totals = await nextLine(replyTimeoutMs, 'reporting its totals') as ScraperTotals;
      await exited;
      return totals;
    },
  }));
}

/** The decoy HTTP server (bench-scrape-decoy.ts), serving what the broker at `brokerHttpPort` answered to each scraped path. */
export function startDecoyProcess(brokerHttpPort: number): Promise<{ readonly port: number; readonly pid: number | undefined; stop(): void }> {
  const child = spawn(process.execPath, [resolve(builtTools, 'bench-scrape-decoy.js'), String(brokerHttpPort)], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolvePromise, reject) => {
    let buffered = '';
    child.once('exit', (code) => reject(new Error(`the decoy process exited with ${code} before it was ready`)));
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const newline = buffered.indexOf('\n');
      if (newline < 0) return;
      const { port } = JSON.parse(buffered.slice(0, newline)) as { port: number };
      resolvePromise({ port, pid: child.pid, stop: () => { child.kill('SIGTERM'); } });
    });
  });
}
