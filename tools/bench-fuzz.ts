/**
 * `npm run bench -- fuzz`: the fuzz test's generators at volume. For each
 * protocol, a whole Cairn runs in this process and fuzzCasesInFlight
 * connections at a time send generated cases (for MQTT: tools/mqtt-fuzz-frames.ts,
 * the same arbitraries as test/property/mqtt-fuzz.test.ts; for AMQP:
 * tools/bench-fuzz-amqp.ts, its own module) until about
 * CAIRN_FUZZ_FRAMES frames (default 1,000,000) have been sent, while a canary
 * client keeps publishing and receiving. It prints frames/s and connections/s,
 * and for any failure (something thrown in the process, a connection the
 * broker left open, the canary failing, an error logged by the broker) the
 * seed of the case.
 *
 * Every case is drawn from its own seed (the run's seed + its index), so one
 * failure replays alone: CAIRN_FUZZ_CASE=mqtt:<seed> npm run bench -- fuzz
 * sends just that case and prints its bytes, what happened, and the broker's
 * log lines. Failures are printed, not turned into an exit code: a bench
 * never fails the run.
 *
 * One function per protocol (runMqttFuzz, replayMqttCase); another protocol
 * adds its own beside them, returning the same FuzzReport, and registers
 * them in `protocols` below.
 */
import { replayAmqpCase, runAmqpFuzz } from './bench-fuzz-amqp.js';
import { sendFuzzCase, type FuzzCaseOutcome } from './fuzz-socket.js';
import { InProcessCairn } from './in-process-cairn.js';
import { MqttCanary } from './mqtt-canary.js';
import { mqttFuzzCaseFromSeed, type MqttFuzzCase, type MqttFuzzOptions } from './mqtt-fuzz-frames.js';
import { ProcessErrorWatch } from './process-error-watch.js';

const fuzzCasesInFlight = 16;
const closeTimeoutMs = 10_000;
/** Stop a run after this many failures: the seeds are what matters, not their count. */
const failuresMax = 20;
const mqttOptions: MqttFuzzOptions = { packetBytesMax: 4096, goodFramesMin: 20, goodFramesMax: 60 };

export interface FuzzFailure {
  /** The case's own seed (CAIRN_FUZZ_CASE=<protocol>:<seed> replays it); several when it cannot be told which case in flight did it. */
  readonly caseSeeds: readonly number[];
  readonly problem: string;
}

export interface FuzzReport {
  readonly protocol: string;
  readonly runSeed: number;
  readonly frames: number;
  readonly connections: number;
  readonly seconds: number;
  readonly canaryRoundTrips: number;
  readonly failures: readonly FuzzFailure[];
}

export interface FuzzRunOptions {
  readonly framesTarget: number;
  readonly runSeed: number;
}

/** MQTT: generated connections against an in-process Cairn until framesTarget frames are sent. */
export async function runMqttFuzz(options: FuzzRunOptions): Promise<FuzzReport> {
  const processErrors = ProcessErrorWatch.start();
  const cairn = await InProcessCairn.start({ logLevel: 'warn', flags: ['--mqtt-max-packet-bytes', String(mqttOptions.packetBytesMax)] });
  const canary = await MqttCanary.connect(cairn.mqttPort, { roundTripMsMax: closeTimeoutMs });
  canary.runInBackground();
  const failures: FuzzFailure[] = [];
  const inFlight = new Set<number>();
  let frames = 0;
  let connections = 0;
  let nextIndex = 0;
  let errorsSeen = 0;
  let errorLinesSeen = 0;
  const started = performance.now();
  const checkProcess = (): void => {
    const problems = [
      ...processErrors.errors.slice(errorsSeen).map((error) => `thrown in the process: ${String(error)}`),
      ...cairn.errorLines.slice(errorLinesSeen).map((line) => `broker logged an error: ${line.msg ?? JSON.stringify(line)}`),
      ...(canary.failure !== undefined && !failures.some((failure) => failure.problem.startsWith('canary')) ? [`canary: ${canary.failure.message}`] : []),
    ];
    errorsSeen = processErrors.errors.length;
    errorLinesSeen = cairn.errorLines.length;
    for (const problem of problems) failures.push({ caseSeeds: [...inFlight], problem });
  };
  const worker = async (): Promise<void> => {
    while (frames < options.framesTarget && failures.length < failuresMax) {
      const caseSeed = (options.runSeed + nextIndex++) % 2 ** 31;
      const fuzzCase = mqttFuzzCaseFromSeed(mqttOptions, caseSeed);
      inFlight.add(caseSeed);
      const outcome = await sendMqttCase(cairn.mqttPort, fuzzCase);
      frames += fuzzCase.frames;
      connections += 1;
      if (outcome !== 'closed') failures.push({ caseSeeds: [caseSeed], problem: `${fuzzCase.name}: connection ${outcome}` });
      checkProcess();
      inFlight.delete(caseSeed);
      if (connections % 10_000 === 0) console.log(`  mqtt: ${frames} frames, ${connections} connections, ${Math.round(frames / ((performance.now() - started) / 1000))} frames/s`);
    }
  };
  try {
    await Promise.all(Array.from({ length: fuzzCasesInFlight }, worker));
    const seconds = (performance.now() - started) / 1000;
    await canary.stop();
    checkProcess();
    return { protocol: 'mqtt', runSeed: options.runSeed, frames, connections, seconds, canaryRoundTrips: canary.roundTrips, failures };
  } finally {
    processErrors.stop();
    await cairn.stop();
  }
}

function sendMqttCase(port: number, fuzzCase: MqttFuzzCase): Promise<FuzzCaseOutcome> {
  return sendFuzzCase({ port, writes: fuzzCase.writes, halfClose: !fuzzCase.brokerMustClose, closeTimeoutMs });
}

/** Send one MQTT case (from its seed) and say what it was and what happened. */
async function replayMqttCase(caseSeed: number): Promise<void> {
  const processErrors = ProcessErrorWatch.start();
  const cairn = await InProcessCairn.start({ logLevel: 'debug', flags: ['--mqtt-max-packet-bytes', String(mqttOptions.packetBytesMax)] });
  try {
    const fuzzCase = mqttFuzzCaseFromSeed(mqttOptions, caseSeed);
    console.log(`case ${caseSeed}: ${fuzzCase.name}, ${fuzzCase.frames} frames, writes: ${fuzzCase.writes.map((bytes) => bytes.toString('hex')).join(' | ')}`);
    const outcome = await sendMqttCase(cairn.mqttPort, fuzzCase);
    console.log(`outcome: ${outcome}; thrown: ${processErrors.describe() || 'nothing'}`);
    for (const line of cairn.logLines.filter((entry) => entry['protocol'] === 'mqtt')) console.log(`  broker: ${JSON.stringify(line)}`);
  } finally {
    processErrors.stop();
    await cairn.stop();
  }
}

function printFuzzReport(report: FuzzReport): void {
  const perSecond = (count: number): string => Math.round(count / report.seconds).toLocaleString('en-US');
  console.log(
    `${report.protocol}: ${report.frames.toLocaleString('en-US')} frames over ${report.connections.toLocaleString('en-US')} connections in ${report.seconds.toFixed(1)} s: ` +
      `${perSecond(report.frames)} frames/s, ${perSecond(report.connections)} connections/s; canary round trips: ${report.canaryRoundTrips}; run seed ${report.runSeed}`,
  );
  if (report.failures.length === 0) console.log(`${report.protocol}: no failures`);
  for (const failure of report.failures) {
    const replays = failure.caseSeeds.map((seed) => `CAIRN_FUZZ_CASE=${report.protocol}:${seed}`).join(' or ');
    console.log(`${report.protocol} FAILURE: ${failure.problem}; replay with ${replays} npm run bench -- fuzz`);
  }
}

interface FuzzProtocol {
  readonly name: string;
  readonly run: (options: FuzzRunOptions) => Promise<FuzzReport>;
  readonly replay: (caseSeed: number) => Promise<void>;
}

const protocols: readonly FuzzProtocol[] = [
  { name: 'mqtt', run: runMqttFuzz, replay: replayMqttCase },
  { name: 'amqp', run: runAmqpFuzz, replay: replayAmqpCase },
];

export async function benchFuzz(): Promise<void> {
  const replay = process.env['CAIRN_FUZZ_CASE'];
  if (replay !== undefined && replay !== '') {
    const [name, seed] = replay.split(':');
    const protocol = protocols.find((candidate) => candidate.name === name);
    if (protocol === undefined || seed === undefined || !Number.isSafeInteger(Number(seed))) {
      console.error(`CAIRN_FUZZ_CASE must be <protocol>:<seed> with protocol one of ${protocols.map((candidate) => candidate.name).join(', ')}; got '${replay}'`);
      return;
    }
    await protocol.replay(Number(seed));
    return;
  }
  const framesTarget = Number(process.env['CAIRN_FUZZ_FRAMES'] ?? 1_000_000);
  const runSeed = Number(process.env['CAIRN_FUZZ_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
  console.log(`fuzz: ~${framesTarget.toLocaleString('en-US')} frames per protocol (CAIRN_FUZZ_FRAMES), ${fuzzCasesInFlight} connections in flight, run seed ${runSeed} (CAIRN_FUZZ_SEED)`);
  for (const protocol of protocols) printFuzzReport(await protocol.run({ framesTarget, runSeed }));
}
