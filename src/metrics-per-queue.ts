/**
 * The per-queue families of /metrics/per-object (rabbitmq_queue_*{vhost,queue}),
 * written as exposition text straight from the broker's queues. prom-client
 * builds them through a labelled Gauge (a label object, hashed, per series per
 * scrape, then formatted again): over 1,000 queues that took 50–85 ms of the
 * event loop per scrape, a pause every client felt (bench: `npm run bench --
 * scrape`). One pass over the queues writes all four families here.
 */
import type { Broker } from './core/broker.js';
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

/** The four families, one series per queue (the first queueSeriesMax queues), HELP and TYPE first; ends with a newline. */
export function perQueueExposition(broker: Broker): string {
  const lines: string[][] = queueFamilies.map(([name, help]) => [`# HELP ${name} ${help}`, `# TYPE ${name} gauge`]);
  let series = 0;
  for (const queue of broker.queues.values()) {
    if (series++ >= queueSeriesMax) break;
    const labels = `{vhost="/",queue="${escapeLabelValue(queue.name)}"}`;
    const unacknowledged = queue.unacked.size;
    const values = [queue.readyCount, unacknowledged, queue.readyCount + unacknowledged, queue.consumers.length];
    for (let family = 0; family < queueFamilies.length; family++) lines[family]!.push(`${queueFamilies[family]![0]}${labels} ${values[family]}`);
  }
  return `${lines.map((family) => family.join('\n')).join('\n')}\n`;
}
