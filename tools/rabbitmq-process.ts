/**
 * A private RabbitMQ node for the side-by-side benchmarks (bench-amqp.ts,
 * bench-backlog.ts): its own node name, AMQP/distribution/epmd ports, data,
 * logs and Erlang cookie ($HOME) in a temp dir, no plugins, started as a child
 * process (never the system service) in its own process group and stopped
 * afterwards. startRabbit on the same dir and ports after kill() brings the
 * same node back on its data (a crash-restart). Nothing is installed here.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { cleanupOnExit } from './bench-cleanup.js';
import { canConnect, commandExists, freePort } from './bench-mqtt.js';

const rabbitStartTimeoutMsDefault = 60_000;
const rabbitStopTimeoutMs = 20_000;
const groupGoneTimeoutMs = 10_000;
const nodeName = 'cairnbench@localhost';

const rabbitInstallHint = 'To compare, install it: apt-get install -y --no-install-recommends rabbitmq-server on Debian/Ubuntu (the bench never starts the service), brew install rabbitmq on macOS';

export interface RabbitPorts { readonly amqp: number; readonly distribution: number; readonly epmd: number }

export interface RabbitProcess {
  readonly port: number;
  readonly ports: RabbitPorts;
  readonly version: string;
  /** RABBITMQ_MNESIA_BASE: the node's message store and queue indexes. */
  readonly mnesiaDir: string;
  /** The Erlang VM's pid (the child is the start script), undefined off Linux or once it is gone. */
  beamPid(): number | undefined;
  /** SIGKILL to the whole node (a crash); its epmd stays up for a restart on the same ports. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Debian's /usr/sbin/rabbitmq-server is a wrapper that `su`s to the rabbitmq
 * user, dropping our environment; the real scripts sit in /usr/lib/rabbitmq/bin.
 */
function rabbitScript(name: 'rabbitmq-server' | 'rabbitmqctl'): string {
  const debian = join('/usr/lib/rabbitmq/bin', name);
  return fs.existsSync(debian) ? debian : name;
}

/** The environment that makes a RabbitMQ node private: its name, ports, epmd, files and Erlang cookie ($HOME). */
function rabbitEnvironment(dir: string, ports: RabbitPorts): NodeJS.ProcessEnv {
  for (const sub of ['home', 'mnesia', 'log']) fs.mkdirSync(join(dir, sub), { recursive: true });
  fs.writeFileSync(join(dir, 'rabbitmq.conf'), 'disk_free_limit.absolute = 50MB\n');
  fs.writeFileSync(join(dir, 'enabled_plugins'), '[].\n'); // no management plugin, no plugins at all
  return {
    ...process.env,
    HOME: join(dir, 'home'),
    RABBITMQ_NODENAME: nodeName,
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_NODE_PORT: String(ports.amqp),
    RABBITMQ_DIST_PORT: String(ports.distribution),
    ERL_EPMD_PORT: String(ports.epmd),
    RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: join(dir, 'log'),
    RABBITMQ_CONFIG_FILE: join(dir, 'rabbitmq.conf'),
    RABBITMQ_ADVANCED_CONFIG_FILE: join(dir, 'advanced.config'),
    RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, 'enabled_plugins'),
    RABBITMQ_CONF_ENV_FILE: join(dir, 'rabbitmq-env.conf'),
    RABBITMQ_PID_FILE: join(dir, 'rabbitmq.pid'),
  };
}

/** The pid of the process named `name` in process group `group` (Linux /proc), if any. */
function processInGroup(group: number, name: string): number | undefined {
  let entries: string[];
  try { entries = fs.readdirSync('/proc'); } catch { return undefined; }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid pgrp …; comm may hold spaces, so split after its closing parenthesis.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === group && fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === name) return Number(entry);
    } catch { /* the process ended while we looked */ }
  }
  return undefined;
}

/** Resolves once no process of group `group` is left (bounded: a stuck group is reported by the restart that follows). */
async function groupGone(group: number): Promise<void> {
  const deadline = Date.now() + groupGoneTimeoutMs;
  while (Date.now() < deadline) {
    try { process.kill(-group, 0); } catch { return; }
    await new Promise((done) => setTimeout(done, 5));
  }
}

/**
 * Starts the node in `dir` (fresh ports unless `ports` is given: a restart must reuse them) and waits until
 * its AMQP port accepts connections.
 */
export async function startRabbit(dir: string, ports?: RabbitPorts, startTimeoutMs = rabbitStartTimeoutMsDefault): Promise<RabbitProcess> {
  const chosen = ports ?? { amqp: await freePort(), distribution: await freePort(), epmd: await freePort() };
  const env = rabbitEnvironment(dir, chosen);
  // Its own process group, so a stop can reach the shell script, beam.smp and their helpers at once.
  const child = spawn(rabbitScript('rabbitmq-server'), [], { env, cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  child.stdout!.on('data', (chunk: Buffer) => { if (output.length < 200) output.push(chunk.toString()); });
  child.stderr!.on('data', (chunk: Buffer) => { if (output.length < 200) output.push(chunk.toString()); });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const killGroup = (): void => { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* already gone */ } };
  // An interrupted bench must not leave a broker (or its private epmd) behind.
  const unregister = cleanupOnExit(() => { killGroup(); killEpmd(env); });
  const stop = async (): Promise<void> => {
    await stopRabbit(child, exited, env);
    unregister();
  };
  // The exit cleanup stays registered: the private epmd outlives the node it served.
  const kill = async (): Promise<void> => {
    killGroup();
    await exited;
    // The script exits first; beam.smp, a grandchild, may still hold the AMQP port while the kernel tears it down.
    await groupGone(child.pid!);
  };
  const deadline = Date.now() + startTimeoutMs;
  while (!(await canConnect(chosen.amqp))) {
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`RabbitMQ did not start within ${startTimeoutMs} ms:\n${output.join('').slice(-2000)}`);
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  const version = /RabbitMQ (\d+\.\d+\.\d+)/.exec(output.join(''))?.[1] ?? 'unknown version';
  return { port: chosen.amqp, ports: chosen, version, mnesiaDir: join(dir, 'mnesia'), beamPid: () => processInGroup(child.pid!, 'beam.smp'), kill, stop };
}

/** epmd daemonizes out of the group; it listens on our private ERL_EPMD_PORT, so this stops only ours. */
function killEpmd(env: NodeJS.ProcessEnv): void {
  spawnSync('epmd', ['-kill'], { env, stdio: 'ignore', timeout: 5_000 });
}

/** rabbitmqctl stop, then SIGKILL to the process group if it lingers; then the private epmd. */
async function stopRabbit(child: ChildProcess, exited: Promise<void>, env: NodeJS.ProcessEnv): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    spawnSync(rabbitScript('rabbitmqctl'), ['stop'], { env, stdio: 'ignore', timeout: rabbitStopTimeoutMs });
    const timer = setTimeout(() => { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* already gone */ } }, 10_000);
    await exited;
    clearTimeout(timer);
  }
  // Helpers started with their own group (the disk monitor) end with beam; make sure nothing of the group remains.
  try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* the group is empty */ }
  killEpmd(env);
}

/** Starts a private RabbitMQ when one is installed; the note says what the column holds (or how to get one). */
export async function maybeStartRabbit(dir: string, describe: string): Promise<{ rabbit?: RabbitProcess; note: string }> {
  if (!commandExists('rabbitmq-server')) return { note: `rabbitmq-server not on PATH: RabbitMQ column skipped; the bench never installs it. ${rabbitInstallHint}.` };
  try {
    const rabbit = await startRabbit(dir);
    return { rabbit, note: `RabbitMQ ${rabbit.version}: private node, ${describe}` };
  } catch (error) {
    return { note: `RabbitMQ failed to start, column skipped: ${(error as Error).message}` };
  }
}
