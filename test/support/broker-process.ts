/**
 * Runs `cairn serve` (the built dist/src/cli.js) as a child process for crash
 * tests: ports are picked by the OS (port 0) and read back from the start-up
 * log; kill() is a real SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const cli = resolve(import.meta.dirname, '../../dist/src/cli.js');

export interface BrokerProcess {
  readonly child: ChildProcess;
  readonly mqttPort: number;
  readonly amqpPort: number;
  readonly httpPort: number;
  readonly output: string[];
  kill(): Promise<void>;
  stop(): Promise<void>;
}

export function tempDataDir(prefix = 'cairn-crash-'): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export function startBroker(dataDir: string, extraArgs: readonly string[] = []): Promise<BrokerProcess> {
  const child = spawn(process.execPath, [cli, 'serve', '--data', dataDir, '--mqtt-port', '0', '--amqp-port', '0', '--http-port', '0', ...extraArgs], {
    env: { ...process.env, CAIRN_LOG_FORMAT: 'json', CAIRN_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  return new Promise((resolvePromise, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`broker did not start within 15 s:\n${output.join('\n')}`)), 15_000);
    child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    const exitedEarly = (code: number | null): void => { clearTimeout(timer); reject(new Error(`broker exited with ${code} before it was ready:\n${output.join('\n')}`)); };
    child.once('exit', exitedEarly);
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        output.push(line);
        const entry = JSON.parse(line) as { msg?: string; mqtt?: number | string; amqp?: number | string; http?: number | string };
        if (entry.msg?.includes(' ready')) {
          clearTimeout(timer);
          child.off('exit', exitedEarly);
          resolvePromise({
            child, output,
            mqttPort: Number(entry.mqtt), amqpPort: Number(entry.amqp), httpPort: Number(entry.http),
            kill: async () => { child.kill('SIGKILL'); await exited; },
            stop: async () => { child.kill('SIGTERM'); await exited; },
          });
        }
      }
    });
  });
}
