/**
 * The two brokers of the backlog benchmark behind one interface: started,
 * SIGKILLed and restarted on the same data, with the pid whose RSS counts
 * (Cairn: its node process; RabbitMQ: beam.smp) and the directory whose
 * bytes count (Cairn: its data directory; RabbitMQ: its mnesia directory).
 */
import { cleanupOnExit } from './bench-cleanup.js';
import { filesBytes } from './bench-measures.js';
import { runCairnCommand, startCairnProcess, type CairnProcess } from './cairn-process.js';
import { maybeStartRabbit, startRabbit } from './rabbitmq-process.js';

/** Longest wait for a restart (ready line or AMQP port, then every count back): today's Cairn replays for a while. */
export const restartTimeoutMs = 600_000;
const inspectTimeoutMs = 600_000;
// No MQTT or HTTP listener; the count bound well above any backlog the bench fills (Cairn's default drops beyond 100,000).
const cairnFlags = ['--mqtt-port', 'off', '--http-port', 'off', '--queue-max', '10000000'];

export interface BacklogBroker {
  readonly name: 'Cairn' | 'RabbitMQ';
  readonly dataDir: string;
  url(): string;
  pid(): number | undefined;
  /** SIGKILL; resolves once the process is gone. */
  kill(): Promise<void>;
  /** Starts again on the same data; resolves once it accepts connections (Cairn: its ready line). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

async function launchCairn(dataDir: string, readyTimeoutMs?: number): Promise<{ process: CairnProcess; unregister: () => void }> {
  const process = await startCairnProcess(dataDir, cairnFlags, {}, readyTimeoutMs);
  return { process, unregister: cleanupOnExit(() => process.child.kill('SIGKILL')) };
}

export async function startCairnBacklogBroker(dataDir: string): Promise<BacklogBroker> {
  let running = await launchCairn(dataDir);
  return {
    name: 'Cairn',
    dataDir,
    url: () => `amqp://127.0.0.1:${running.process.amqpPort}`,
    pid: () => running.process.child.pid,
    kill: async () => {
      await running.process.kill();
      running.unregister();
    },
    restart: async () => { running = await launchCairn(dataDir, restartTimeoutMs); },
    stop: async () => {
      await running.process.stop();
      running.unregister();
    },
  };
}

/** A private RabbitMQ node when `rabbitmq-server` is installed; the note says what its column holds (or how to install it). */
export async function startRabbitBacklogBroker(dir: string): Promise<{ broker?: BacklogBroker; note: string }> {
  const started = await maybeStartRabbit(dir, 'default (version 1) classic queues, no plugins, data on the same disk, default memory watermark; both brokers run side by side and each phase alternates between them.');
  if (started.rabbit === undefined) return { note: started.note };
  let rabbit = started.rabbit;
  return {
    note: started.note,
    broker: {
      name: 'RabbitMQ',
      dataDir: rabbit.mnesiaDir,
      url: () => `amqp://127.0.0.1:${rabbit.port}`,
      pid: () => rabbit.beamPid(),
      kill: () => rabbit.kill(),
      restart: async () => { rabbit = await startRabbit(dir, rabbit.ports, restartTimeoutMs); },
      stop: () => rabbit.stop(),
    },
  };
}

export interface CairnRecords {
  /** Bytes of the frames in the segments (each segment's header included), as `cairn inspect segments` reads them. */
  readonly recordBytes?: number;
  readonly records?: number;
  /** The .seg files' sizes: the frames plus the zero-filled space kept ahead of the writer. */
  readonly segmentFileBytes: number;
  readonly segmentFiles: number;
  readonly snapshotBytes: number;
  readonly snapshotFiles: number;
  /** Why recordBytes is missing, when it is. */
  readonly inspectError?: string;
}

/** The records' bytes (`cairn inspect segments --json`, safe on a live broker) beside the segment and snapshot files. */
export async function readCairnRecords(dataDir: string): Promise<CairnRecords> {
  const segmentFiles = filesBytes(dataDir, (name) => name.endsWith('.seg'));
  const snapshotFiles = filesBytes(dataDir, (name) => name.endsWith('.snap'));
  const files = { segmentFileBytes: segmentFiles.bytes, segmentFiles: segmentFiles.files, snapshotBytes: snapshotFiles.bytes, snapshotFiles: snapshotFiles.files };
  const inspected = await runCairnCommand(['inspect', 'segments', '--data', dataDir, '--json'], inspectTimeoutMs);
  if (inspected.code !== 0) return { ...files, inspectError: `cairn inspect segments exited with ${inspected.code}: ${inspected.stderr.slice(-500)}` };
  let recordBytes = 0;
  let records = 0;
  for (const line of inspected.stdout.split('\n')) {
    if (line.trim() === '') continue;
    const entry = JSON.parse(line) as { type?: string; bytes?: number; records?: number };
    if (entry.type !== 'segment') continue;
    recordBytes += entry.bytes ?? 0;
    records += entry.records ?? 0;
  }
  return { ...files, recordBytes, records };
}
