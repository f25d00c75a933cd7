/**
 * The per-queue families of /metrics/per-object (rabbitmq_queue_*{vhost,queue}),
 * written as exposition text straight from the broker's queues. prom-client
 * builds them through a labelled Gauge (a label object, hashed, per series per
 * scrape, then formatted again): over 1,000 queues that took 50–85 ms of the
 * event loop per scrape, a pause every client felt (bench: `npm run bench --
 * scrape`). One pass over the queues reads their figures, and the series are
 * written as bytes into a reused buffer (http/answer-bytes.ts), each queue's
 * labels encoded once, in slices with turns of the event loop between them
 * (http/answer-slices.ts): the figures are all read before the first slice.
 * A family whose queues and figures have not changed since the last scrape
 * is the last scrape's text, copied (KeptFamilies).
 */
import type { Broker } from './core/broker.js';
import { AnswerBytes } from './http/answer-bytes.js';
import { itemsPerCheck, renderAtOnce } from './http/answer-slices.js';
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

/** The queues of one per-object exposition and their figures (four per queue, in queueFamilies' order), read at one moment. */
export interface QueueFigures {
  readonly queues: ReadonlyArray<{ readonly name: string }>;
  readonly figures: readonly number[];
}

/** The first queueSeriesMax queues' figures, now. */
export function readQueueFigures(broker: Broker): QueueFigures {
  const queues: Array<{ readonly name: string }> = [];
  const figures: number[] = [];
  for (const queue of broker.queues.values()) {
    if (queues.length >= queueSeriesMax) break;
    const unacknowledged = queue.unacked.size;
    queues.push(queue);
    figures.push(queue.readyCount, unacknowledged, queue.readyCount + unacknowledged, queue.consumers.length);
  }
  return { queues, figures };
}

/** One per-object exposition's families as written: a later one whose queues and a family's figures are the same copies that family. */
interface WrittenFamilies {
  readonly queues: ReadonlyArray<{ readonly name: string }>;
  readonly figures: readonly number[];
  /** Each family's text, HELP and TYPE included, in queueFamilies' order. */
  readonly texts: readonly Buffer[];
}

/** The families of the last per-object exposition, for the next one (Metrics keeps one). */
export class KeptFamilies {
  last: WrittenFamilies | undefined = undefined;
}

function sameQueues(a: ReadonlyArray<object>, b: ReadonlyArray<object>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameFamilyFigures(a: readonly number[], b: readonly number[], family: number): boolean {
  for (let at = family; at < a.length; at += queueFamilies.length) if (!Object.is(a[at], b[at])) return false;
  return true;
}

/**
 * The four families, one series per queue of `queues`, HELP and TYPE first, into `out`; ends with a newline. Yields
 * after every itemsPerCheck series (answer-slices.ts). With `kept`, a family whose queues and figures are those of the
 * last exposition written with it is that exposition's text (a copy), and this exposition's families are kept when it
 * is done.
 */
export function* perQueueExpositionSlices({ queues, figures }: QueueFigures, out: AnswerBytes, kept?: KeptFamilies): Generator<void, void, undefined> {
  const previous = kept?.last !== undefined && sameQueues(kept.last.queues, queues) ? kept.last : undefined;
  const texts: Buffer[] = [];
  let written = 0;
  for (let family = 0; family < queueFamilies.length; family++) {
    const previousText = previous !== undefined && sameFamilyFigures(previous.figures, figures, family) ? previous.texts[family] : undefined;
    if (previousText !== undefined) {
      out.bytes(previousText);
      texts.push(previousText);
      yield;
      continue;
    }
    const start = out.view().length;
    out.ascii(familyHeaders[family]!);
    const name = familyNames[family]!;
    for (let i = 0; i < queues.length; i++) {
      const labels = labelsOf(queues[i]!);
      out.range(name, 0, name.length).range(labels, 0, labels.length).number(figures[4 * i + family]!).ascii('\n');
      if (++written % itemsPerCheck === 0) yield;
    }
    if (kept !== undefined) texts.push(Buffer.from(out.view().subarray(start)));
  }
  if (kept !== undefined) kept.last = { queues, figures, texts };
}

/** The same as text (tests). */
export function perQueueExposition(broker: Broker): string {
  const out = new AnswerBytes(Buffer.alloc(256));
  renderAtOnce(perQueueExpositionSlices(readQueueFigures(broker), out));
  return out.view().toString('utf8');
}
