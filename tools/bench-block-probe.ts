/**
 * How long the broker's event loop stays blocked, seen from outside: a worker
 * thread sends MQTT PINGREQs one after another over its own connection and
 * times each PINGRESP. A PINGREQ costs the broker next to nothing, so on an
 * otherwise idle broker a slow PINGRESP is a stretch of the loop spent on
 * something else (here: answering a scrape). It runs on a worker thread so
 * that the bench's own event loop (fetching and parsing the scraped answers)
 * does not delay its timing.
 */
import * as net from 'node:net';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

export interface BlockProbe {
  /** The PINGREQ round trips (ms) since the last take. */
  take(): Promise<number[]>;
  stop(): Promise<void>;
}

/** MQTT 3.1.1 CONNECT, clean session, keep-alive 60 s, client id "block-probe". */
const connectPacket = Buffer.from([0x10, 23, 0, 4, 0x4d, 0x51, 0x54, 0x54, 4, 0x02, 0, 60, 0, 11, ...Buffer.from('block-probe')]);
const pingRequest = Buffer.from([0xc0, 0]);

export function startBlockProbe(mqttPort: number): Promise<BlockProbe> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { mqttPort } });
  const replies: Array<(latencies: number[]) => void> = [];
  worker.on('message', (message: number[] | 'ready') => {
    if (message !== 'ready') replies.shift()?.(message);
  });
  return new Promise((resolve, reject) => {
    worker.once('error', reject);
    worker.once('message', () => resolve({
      take: () => new Promise((done) => { replies.push(done); worker.postMessage('take'); }),
      stop: async () => { await worker.terminate(); },
    }));
  });
}

/** The worker: connect, then ping forever, answering each 'take' with what it measured since the last one. */
function probe(mqttPort: number): void {
  let latencies: number[] = [];
  parentPort!.on('message', () => {
    parentPort!.postMessage(latencies);
    latencies = [];
  });
  const socket = net.connect(mqttPort, '127.0.0.1');
  socket.setNoDelay(true);
  let connected = false;
  let sent = 0;
  // One request outstanding at a time: each chunk read is the CONNACK or one PINGRESP.
  socket.on('data', () => {
    if (connected) latencies.push(performance.now() - sent);
    else parentPort!.postMessage('ready');
    connected = true;
    sent = performance.now();
    socket.write(pingRequest);
  });
  socket.write(connectPacket);
}

if (!isMainThread && (workerData as { mqttPort?: number } | null)?.mqttPort !== undefined) probe((workerData as { mqttPort: number }).mqttPort);
