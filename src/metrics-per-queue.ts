/**
 * The per-queue families of /metrics/per-object (rabbitmq_queue_*{vhost,queue}),
 * written as exposition text straight from the broker's queues. prom-client
 * builds them through a labelled Gauge (a label object, hashed, per series per
 * scrape, then formatted again): over 1,000 queues that took 50–85 ms of the
 * event loop per scrape, a pause every client felt (bench: `npm run bench --
 * scrape`). One pass over the queues reads their figures, and the series are
 * written as bytes into a reused buffer (http/answer-bytes.ts), each queue's
 * labels encoded once.
 */
import type { Broker } from './core/broker.js';
import { AnswerBytes } from './http/answer-bytes.js';
import { metricNames } from './metric-names.js';

/** Queues beyond this many get no per-object series of their own (they still count in the aggregated sums). */
export const queueSeriesMax = 10_000;

export const queueFamilies = [
  [metricNames.queueMessagesReady, 'Messages ready to be delivered to consumers', 'ready'],
  [metricNames.queueMessagesUnacked, 'Messages delivered to consumers but not yet acknowledged', 'unacknowledged'],
  [metricNames.queueMessages, 'Sum of ready and unacknowledged messages - total queue depth', 'messages'],
  [metricNames.queueConsumers, 'Consumers on a queue', 'consumers'],
] as const;

/** A label value as the text format wants it: backslash, double quote and newline escaped. */
export function escapeLabelValue(value: string): string {
  return /[\\"\n]/.test(value) ? value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') : value;
}

/** Per queue, `{vhost="/",queue="…"} ` as bytes: a queue's name never changes, so its labels are escaped and encoded once. */
const labelBytes = new WeakMap<object, Buffer>();

function labelsOf(queue: { readonly name: string }): Buffer {
  let bytes = labelBytes.get(queue);
  if (bytes === undefined) {
    bytes = Buffer.from(`{vhost="/",queue="${escapeLabelValue(queue.name)}"} `);
    labelBytes.set(queue, bytes);
  }
  return bytes;
}

const familyHeaders = queueFamilies.map(([name, help]) => `# HELP ${name} ${help}\n# TYPE ${name} gauge\n`);
const familyNames = queueFamilies.map(([name]) => Buffer.from(name));

/** The four families, one series per queue (the first queueSeriesMax queues), HELP and TYPE first, into `out`; ends with a newline. */
export function writePerQueueExposition(broker: Broker, out: AnswerBytes): void {
  // The figures are read once per queue, then written family by family.
  const queues: Array<{ readonly name: string }> = [];
  const figures: number[] = [];
  for (const queue of broker.queues.values()) {
    if (queues.length >= queueSeriesMax) break;
    const unacknowledged = queue.unacked.size;
    queues.push(queue);
    figures.push(queue.readyCount, unacknowledged, queue.readyCount + unacknowledged, queue.consumers.length);
  }
  for (let family = 0; family < queueFamilies.length; family++) {
    out.ascii(familyHeaders[family]!);
    const name = familyNames[family]!;
    for (let i = 0; i < queues.length; i++) {
      const labels = labelsOf(queues[i]!);
      out.range(name, 0, name.length).range(labels, 0, labels.length).number(figures[4 * i + family]!).ascii('\n');
    }
  }
}

/** The same as text (tests). */
export function perQueueExposition(broker: Broker): string {
  const out = new AnswerBytes(Buffer.alloc(256));
  writePerQueueExposition(broker, out);
  return out.view().toString('utf8');
}
