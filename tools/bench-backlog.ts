/**
 * `npm run bench -- backlog`: what a broker does while consumers are away
 * (issue 12). Against Cairn (child process) and, when `rabbitmq-server` is
 * installed, a private RabbitMQ node running beside it, phase by phase in
 * alternation (Cairn, then RabbitMQ):
 *   1. fill N persistent messages of S bytes into 4 durable queues
 *      (backlog-workload.ts: pipelined confirms, rate per 50k slice), after
 *      a warm-up of 20,000 through a scratch queue that is then deleted;
 *   2. RSS of the broker process, data-directory bytes (Cairn: against the
 *      bytes of the records in its segments, snapshots shown apart);
 *   3. SIGKILL, restart on the same data, time until every queue is back at
 *      its count (queue.declare passive, polled), RSS again;
 *   4. drain with 4 consumers (prefetch 1000, one ack per message).
 * N = CAIRN_BENCH_BACKLOG_MESSAGES (default 1,000,000), S =
 * CAIRN_BENCH_BACKLOG_BYTES (default 1024). The targets are printed
 * beside the figures with PASS/MISS; a benchmark never fails on a target.
 * Data lives in temp dirs (CAIRN_BENCH_DIR picks the disk), removed on every
 * exit path, Ctrl-C included (bench-cleanup.ts).
 */
import * as os from 'node:os';
import { drainQueues, fillQueues, readCounts, waitForCounts, warmUp } from './backlog-workload.js';
import { type BacklogBroker, startCairnBacklogBroker, startRabbitBacklogBroker, readCairnRecords, restartTimeoutMs } from './backlog-brokers.js';
import { printBacklogReport, type BacklogPhases as Phases } from './backlog-report.js';
import { cleanupOnExit } from './bench-cleanup.js';
import { rssBytes, filesBytes } from './bench-measures.js';
import { benchBaseDir, tempDir } from './bench-mqtt.js';

const queueCount = 4;
/** Messages of the fill's warm-up (backlog-workload.ts warmUp); their records stay in the log and count in its bytes. */
const warmUpMessages = 20_000;
const queues = Array.from({ length: queueCount }, (_, i) => `bench.backlog.${i}`);

function positiveIntegerFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw.replaceAll('_', ''));
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, not '${raw}'`);
  return value;
}

function loadAverage(): string {
  return os.loadavg().map((load) => load.toFixed(2)).join(' ');
}

async function fillPhase(broker: BacklogBroker, perQueue: number, body: Buffer, phases: Phases): Promise<void> {
  console.log(`${broker.name}: warming up with ${warmUpMessages.toLocaleString('en-US')} messages through a scratch queue, deleted after (load average ${loadAverage()})`);
  await warmUp(broker.url(), 'bench.backlog.warmup', warmUpMessages, body);
  console.log(`${broker.name}: filling ${(perQueue * queueCount).toLocaleString('en-US')} messages (load average ${loadAverage()})`);
  phases.fill = await fillQueues(broker.url(), queues, perQueue, body);
  const counts = await readCounts(broker.url(), queues);
  phases.afterFill = { rss: rssBytes(broker.pid()), dataDirBytes: filesBytes(broker.dataDir).bytes, counts, records: broker.name === 'Cairn' ? await readCairnRecords(broker.dataDir) : undefined };
}

async function restartPhase(broker: BacklogBroker, phases: Phases): Promise<void> {
  const expected = phases.afterFill!.counts;
  console.log(`${broker.name}: SIGKILL and restart (load average ${loadAverage()})`);
  const killedAt = performance.now();
  await broker.kill();
  const startingAt = performance.now();
  await broker.restart();
  const acceptingSeconds = (performance.now() - killedAt) / 1000;
  const back = await waitForCounts(() => broker.url(), queues, expected, restartTimeoutMs - (performance.now() - startingAt));
  phases.restart = { seconds: (performance.now() - killedAt) / 1000, acceptingSeconds, ...back, rss: rssBytes(broker.pid()) };
}

async function drainPhase(broker: BacklogBroker, bodyBytes: number, phases: Phases): Promise<void> {
  console.log(`${broker.name}: draining (load average ${loadAverage()})`);
  phases.drain = await drainQueues(broker.url(), queues, phases.restart!.counts, bodyBytes);
}

/** Every phase on every broker, alternating; a broker whose phase fails keeps what it measured and sits out the rest. */
async function runPhases(brokers: readonly BacklogBroker[], perQueue: number, bodyBytes: number): Promise<Phases[]> {
  const body = Buffer.alloc(bodyBytes, 0x6d);
  const phases: Phases[] = brokers.map(() => ({}));
  const failed = new Set<number>();
  const steps: Array<(broker: BacklogBroker, mine: Phases) => Promise<void>> = [
    (broker, mine) => fillPhase(broker, perQueue, body, mine),
    (broker, mine) => restartPhase(broker, mine),
    (broker, mine) => drainPhase(broker, bodyBytes, mine),
  ];
  for (const step of steps) {
    for (const [i, broker] of brokers.entries()) {
      if (failed.has(i)) continue;
      try {
        await step(broker, phases[i]!);
      } catch (error) {
        failed.add(i);
        console.log(`${broker.name}: ${(error as Error).message}; its remaining phases are skipped`);
      }
    }
  }
  return phases;
}

export async function benchBacklog(): Promise<void> {
  const messagesWanted = positiveIntegerFromEnv('CAIRN_BENCH_BACKLOG_MESSAGES', 1_000_000);
  const bodyBytes = positiveIntegerFromEnv('CAIRN_BENCH_BACKLOG_BYTES', 1024);
  const perQueue = Math.ceil(messagesWanted / queueCount);
  console.log(`backlog: ${(perQueue * queueCount).toLocaleString('en-US')} persistent messages of ${bodyBytes} B (CAIRN_BENCH_BACKLOG_MESSAGES, CAIRN_BENCH_BACKLOG_BYTES) into ${queueCount} durable queues; disk: ${benchBaseDir()}; ${os.cpus().length} CPUs, load average ${loadAverage()}`);

  const cairnData = tempDir('cairn-bench-backlog-');
  const rabbitDir = tempDir('cairn-bench-backlog-rabbitmq-');
  const unregisterDirs = [cleanupOnExit(cairnData.remove), cleanupOnExit(rabbitDir.remove)];
  const brokers: BacklogBroker[] = [];
  let rabbitNote: string;
  let phases: Phases[];
  try {
    brokers.push(await startCairnBacklogBroker(cairnData.dir));
    const rabbit = await startRabbitBacklogBroker(rabbitDir.dir);
    rabbitNote = rabbit.note;
    console.log(rabbitNote);
    if (rabbit.broker !== undefined) brokers.push(rabbit.broker);
    phases = await runPhases(brokers, perQueue, bodyBytes);
  } finally {
    for (const broker of brokers) await broker.stop().catch(() => undefined);
    cairnData.remove();
    rabbitDir.remove();
    for (const unregister of unregisterDirs) unregister();
  }
  console.log(`load average at the end: ${loadAverage()}`);
  printBacklogReport({ messages: perQueue * queueCount, bodyBytes, queues: queueCount }, brokers.map((broker, i) => ({ name: broker.name, ...phases[i]! })));
  console.log(rabbitNote);
}
