/**
 * One fuzz case on the wire, for any protocol: open a TCP connection, send
 * the case's writes (one turn of the event loop apart, so the server really
 * sees them as separate reads), and wait — bounded — for the server to close
 * the connection. A case that cannot promise the server will close on its
 * own half-closes after its last write; the server must then close too.
 * Whatever the server sends back is read and dropped.
 */
import { connect } from 'node:net';

export type FuzzCaseOutcome =
  /** The server closed the connection (FIN or reset). */
  | 'closed'
  /** Still open when the time was up. */
  | 'still-open'
  /** The connection could not even be opened (the server is gone or refusing). */
  | 'connect-failed';

export interface FuzzSend {
  readonly port: number;
  readonly writes: readonly Buffer[];
  /** Half-close after the last write (the server is not expected to close on its own). */
  readonly halfClose: boolean;
  readonly closeTimeoutMs: number;
}

export function sendFuzzCase(send: FuzzSend): Promise<FuzzCaseOutcome> {
  return new Promise((resolve) => {
    const socket = connect({ port: send.port, host: '127.0.0.1', noDelay: true });
    let connected = false;
    let settled = false;
    const finish = (outcome: FuzzCaseOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish('still-open'), send.closeTimeoutMs);
    socket.on('data', () => undefined);
    socket.on('error', () => undefined); // a reset is reported by 'close'
    socket.on('end', () => finish('closed'));
    socket.on('close', () => finish(connected ? 'closed' : 'connect-failed'));
    socket.on('connect', () => {
      connected = true;
      void writeAll(socket, send);
    });
  });
}

async function writeAll(socket: ReturnType<typeof connect>, send: FuzzSend): Promise<void> {
  for (const [index, bytes] of send.writes.entries()) {
    if (index > 0) await new Promise((resolve) => setImmediate(resolve));
    if (socket.destroyed || socket.writableEnded) return;
    socket.write(bytes);
  }
  if (send.halfClose && !socket.destroyed) socket.end();
}
