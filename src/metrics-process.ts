/**
 * prom-client's default process_* and nodejs_* metrics, with the same names,
 * help, types and meaning, where two of its readers are replaced because of
 * what they cost the event loop on every scrape (issue 15):
 * - on Linux, process_resident_memory_bytes, process_virtual_memory_bytes and
 *   process_heap_bytes (/proc/self/status) and process_open_fds (the entries
 *   of /proc/self/fd), which prom-client reads with readFileSync and
 *   readdirSync on the event loop (~0.2 ms each after a second idle): here
 *   they are read on the thread pool (one job each) before the family is
 *   written.
 * - the event-loop delay families (nodejs_eventloop_lag_*) are read from
 *   prom-client's monitor at most once per eventLoopDelayReadIntervalMs.
 * The rest is prom-client's, less its three *_total gauges that promtool
 * rejects (only counters end in _total; each is the sum of the by-type gauge
 * beside it, nodejs_active_handles{type}, so nothing is lost).
 */
import { open, read, readdir } from 'node:fs';
import { collectDefaultMetrics, Gauge, type Registry } from 'prom-client';

/**
 * The event-loop delay monitor's resolution (ms): prom-client's default 10 ms was most of an idle broker's event-loop
 * time (a timer 100 times a second); 100 ms still resolves the lag a scrape reports. Reading the monitor walks its
 * HdrHistogram five times a read; a JS timer feeding samples of Cairn's own is cheaper to read but costs an idle
 * broker's loop more (ten JS callbacks a second), a loss at a Prometheus's usual 15 s interval.
 */
export const eventLoopDelayResolutionMs = 100;

/**
 * prom-client reads its event-loop delay monitor on every scrape: mean, stddev and three percentiles, each a walk of
 * the monitor's HdrHistogram, in one turn of the event loop. Here a read is reused until this much time has passed
 * (RabbitMQ samples its management statistics every 5 s too). A read still resets the monitor, so its figures
 * describe the delays since the read before, as prom-client's do; at a Prometheus's usual 15 s interval every
 * scrape reads anew.
 */
export const eventLoopDelayReadIntervalMs = 5_000;
/** prom-client's gauge whose collect reads the monitor and sets the other seven nodejs_eventloop_lag_* families. */
const eventLoopDelayReader = 'nodejs_eventloop_lag_seconds';

const replacedOnLinux = ['process_resident_memory_bytes', 'process_virtual_memory_bytes', 'process_heap_bytes', 'process_open_fds'];
const rejectedByPromtool = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

export function registerProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: eventLoopDelayResolutionMs });
  const linux = process.platform === 'linux';
  for (const name of [...rejectedByPromtool, ...(linux ? replacedOnLinux : [])]) registry.removeSingleMetric(name);
  if (linux) registerProcReaders(registry);
  readEventLoopDelayAtMostEvery(registry, eventLoopDelayReadIntervalMs);
}

/** prom-client's reader of the event-loop delay monitor, run at most once per `intervalMs` (performance.now()). */
function readEventLoopDelayAtMostEvery(registry: Registry, intervalMs: number): void {
  const reader = registry.getSingleMetric(eventLoopDelayReader) as { collect?: (this: unknown) => unknown } | undefined;
  const read = reader?.collect;
  if (reader === undefined || read === undefined) return;
  let readAt = Number.NEGATIVE_INFINITY;
  reader.collect = function collect(this: unknown): unknown {
    const now = performance.now();
    if (now - readAt < intervalMs) return undefined;
    readAt = now;
    return read.call(this);
  };
}

/** The /proc readings of prom-client's osMemoryHeapLinux.js and processOpenFileDescriptors.js, read on the thread pool. */
function registerProcReaders(registry: Registry): void {
  const registers = [registry];
  const resident = new Gauge({
    name: 'process_resident_memory_bytes', help: 'Resident memory size in bytes.', registers,
    // This family's read sets the two after it, as prom-client's does.
    async collect() {
      const status = await readProcSelfStatus();
      if (status === undefined) return;
      const kilobytes = statusKilobytes(status);
      if (kilobytes.VmRSS !== undefined) resident.set(kilobytes.VmRSS * 1024);
      if (kilobytes.VmSize !== undefined) virtual.set(kilobytes.VmSize * 1024);
      if (kilobytes.VmData !== undefined) heap.set(kilobytes.VmData * 1024);
    },
  });
  const virtual = new Gauge({ name: 'process_virtual_memory_bytes', help: 'Virtual memory size in bytes.', registers });
  const heap = new Gauge({ name: 'process_heap_bytes', help: 'Process heap size in bytes.', registers });
  new Gauge({
    name: 'process_open_fds', help: 'Number of open file descriptors.', registers,
    async collect() {
      const entries = await new Promise<string[] | undefined>((resolve) => readdir('/proc/self/fd', (error, names) => resolve(error === null ? names : undefined)));
      // Less the descriptor the listing itself held open.
      if (entries !== undefined) this.set(entries.length - 1);
    },
  });
}

/** /proc/self/status is a few hundred bytes to 2 KiB. */
const statusBytesMax = 8192;
/**
 * /proc/self/status, opened once for the process and read again from offset 0 each time (the kernel writes it anew
 * on every read): one job on the pool a read. fs.promises.readFile opens, stats, reads and closes, each a job with its
 * own turn and promise steps: ~3x the event loop's instructions of the readFileSync it replaces (callgrind).
 */
let statusDescriptor: Promise<number | undefined> | undefined;

function readProcSelfStatus(): Promise<string | undefined> {
  statusDescriptor ??= new Promise((resolve) => open('/proc/self/status', 'r', (error, fd) => resolve(error === null ? fd : undefined)));
  return statusDescriptor.then((fd) => new Promise((resolve) => {
    if (fd === undefined) return resolve(undefined);
    const buffer = Buffer.allocUnsafe(statusBytesMax);
    read(fd, buffer, 0, statusBytesMax, 0, (error, bytes) => resolve(error === null ? buffer.toString('latin1', 0, bytes) : undefined));
  }));
}

/** VmRSS, VmSize and VmData of /proc/self/status (`VmRSS:\t  123456 kB`), in kB. */
export function statusKilobytes(status: string): Partial<Record<'VmRSS' | 'VmSize' | 'VmData', number>> {
  const found: Partial<Record<'VmRSS' | 'VmSize' | 'VmData', number>> = {};
  for (const match of status.matchAll(/^(VmRSS|VmSize|VmData):\s*(\d+) kB$/gm)) found[match[1] as 'VmRSS' | 'VmSize' | 'VmData'] = Number(match[2]);
  return found;
}
