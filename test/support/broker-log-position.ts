/**
 * Facts a crash test waits on before it kills the broker, read from the
 * broker's HTTP API (GET /api/log, /api/sessions): how far the log is durable,
 * where recovery started (the snapshot it loaded), what a session still owes.
 * A test that kills the broker after these facts hold, instead of after a
 * fixed sleep, tests what it says on any machine, however loaded.
 */
import { until } from './kit.js';
import type { BrokerProcess } from './broker-process.js';

export interface LogPosition {
  readonly nextLsn: number;
  readonly durableLsn: number;
  /** What the broker replayed at start-up: snapshotLsn 0 when it loaded no snapshot. */
  readonly recovery: { readonly snapshotLsn: number; readonly recordsReplayed: number } | null;
}

async function getJson(running: BrokerProcess, path: string): Promise<unknown> {
  const response = await fetch(`http://127.0.0.1:${running.httpPort}${path}`);
  if (!response.ok) throw new Error(`GET ${path}: ${response.status}`);
  return response.json();
}

export async function logPosition(running: BrokerProcess): Promise<LogPosition> {
  return (await getJson(running, '/api/log')) as LogPosition;
}

/**
 * Waits until every record the broker has appended by now is durable, and,
 * with `after`, until the log has grown past that LSN (a record the test
 * caused, such as a PUBCOMP's, has been appended). Records written without a
 * waiter (acks, deliveries) get their fdatasync within a few milliseconds.
 */
export async function untilDurable(running: BrokerProcess, what: string, after?: number): Promise<void> {
  let target: number | undefined;
  await until(async () => {
    const position = await logPosition(running);
    if (target === undefined) {
      if (after !== undefined && position.nextLsn - 1 <= after) return false;
      target = position.nextLsn - 1;
    }
    return position.durableLsn >= target;
  }, `${what}: durable`);
}

interface SessionView {
  readonly clientId: string;
  readonly connected: boolean;
  readonly pending: number;
  readonly inflight: number;
}

/** Waits until the broker owes `clientId` nothing: no message pending or in flight (its acks were applied). */
export async function untilSessionSettled(running: BrokerProcess, clientId: string, options: { connected?: boolean } = {}): Promise<void> {
  await until(async () => {
    const { sessions } = (await getJson(running, '/api/sessions')) as { sessions: SessionView[] };
    const session = sessions.find((s) => s.clientId === clientId);
    if (session === undefined || session.pending > 0 || session.inflight > 0) return false;
    return options.connected === undefined || session.connected === options.connected;
  }, `session ${clientId} owed nothing`);
}
