/**
 * The floor of a Node.js MQTT broker on this machine, for bench.js mqtt's
 * sequential no-subscriber row (issue 18): the fewest lines of MQTT 3.1.1 that
 * the bench's publisher needs — CONNACK, PUBACK, PINGRESP, DISCONNECT —
 * nothing decoded beyond a packet id, nothing stored or routed. Whatever a
 * round trip costs here is Node's and the kernel's, not a broker's.
 *
 * Run as its own process, as Cairn and Mosquitto are:
 * `node bare-puback-server.js data|direct [port]` prints `{"port":N}` on
 * stdout (port 0, the default, lets the OS pick; a fixed one is for profilers).
 * 'data' reads through the socket's 'data' events and writes with
 * socket.write, as a plain Node server does; 'direct' reads and writes the
 * way Cairn does a plain TCP socket (src/protocols/socket-reads.ts,
 * socket-writes.ts). Each packet is answered with one write.
 *
 * `node bare-puback-server.js durable FILE [port]` is the floor of the durable
 * row: 'direct' reads and writes, and each QoS 1 PUBLISH is first appended to
 * FILE by one pwrite on an O_DSYNC descriptor on the event loop (write and
 * sync in one call, as Cairn writes a lone batch) before its PUBACK. What a
 * durable round trip costs here is Node's, the kernel's, the disk's and the
 * machine's (a CPU that went idle while the disk worked has to wake up), not
 * a broker's. With CAIRN_STAGE_TIMING=FILE in its environment it marks the
 * stages Cairn marks (src/stage-timing.ts: read, decoded, sync submitted and
 * done around the pwrite, resolved, ack written) and writes the same report
 * to FILE when it exits, for the bench to set beside Cairn's.
 */
import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { lendSocketBytes } from '../src/protocols/socket-reads.js';
import { socketWriter } from '../src/protocols/socket-writes.js';
import { enableStageTimingFrom, markStage, Stage, stageTimingVariable } from '../src/stage-timing.js';

export type BareReadMode = 'data' | 'direct';

/** Where a durable bare server appends each QoS 1 PUBLISH: an O_DSYNC descriptor and the next offset. */
interface DurableFile { readonly fd: number; offset: number }

const connack = Buffer.from([0x20, 0x02, 0x00, 0x00]);
const pingresp = Buffer.from([0xd0, 0x00]);

/** Answers one connection's packets; bytes of a packet split across reads wait in `pending`, a copy (a direct read is only lent). */
function serve(socket: Socket, mode: BareReadMode, durable: DurableFile | undefined): void {
  const writer = mode === 'direct' ? socketWriter(socket) : { mode: 'stream', write: (bytes: Buffer) => socket.write(bytes) };
  if (mode === 'direct' && writer.mode !== 'direct') throw new Error('bare-puback-server: direct writes are not available in this Node');
  let pending: Buffer | undefined;
  const receive = (chunk: Buffer): void => {
    markStage(Stage.read);
    let bytes = pending === undefined ? chunk : Buffer.concat([pending, chunk]);
    pending = undefined;
    let at = 0;
    while (at < bytes.length) {
      // Fixed header: type byte, then the remaining length (1–4 bytes, 7 bits each).
      let length = 0;
      let shift = 0;
      let cursor = at + 1;
      for (;;) {
        if (cursor >= bytes.length) { pending = Buffer.from(bytes.subarray(at)); return; }
        const byte = bytes[cursor++]!;
        length += (byte & 0x7f) << shift;
        shift += 7;
        if ((byte & 0x80) === 0) break;
      }
      if (cursor + length > bytes.length) { pending = Buffer.from(bytes.subarray(at)); return; }
      const type = bytes[at]! >> 4;
      if (type === 1) {
        writer.write(connack);
      } else if (type === 3 && (bytes[at]! & 0x06) !== 0) {
        // PUBLISH at QoS 1 or 2 (the bench uses 1): the packet id follows the topic.
        markStage(Stage.decoded);
        const idAt = cursor + 2 + bytes.readUInt16BE(cursor);
        if (durable !== undefined) {
          // Timed as Cairn's lone O_DSYNC write: its write is its sync (stage-timing.ts).
          markStage(Stage.syncSubmitted);
          durable.offset += writeSync(durable.fd, bytes, at, cursor + length - at, durable.offset);
          markStage(Stage.syncDone);
        }
        markStage(Stage.resolved);
        writer.write(Buffer.from([0x40, 0x02, bytes[idAt]!, bytes[idAt + 1]!]));
        markStage(Stage.ackWritten);
      } else if (type === 12) {
        writer.write(pingresp);
      } else if (type === 14) {
        socket.end();
        return;
      }
      at = cursor + length;
    }
  };
  socket.on('error', () => socket.destroy());
  if (mode === 'data') {
    socket.on('data', receive);
  } else if (lendSocketBytes(socket, receive) !== 'direct') {
    throw new Error('bare-puback-server: direct reads are not available in this Node');
  }
}

/**
 * Listens on 127.0.0.1 (port 0: the OS picks one), TCP_NODELAY on as Cairn's listener. With `durableFile` (created
 * or truncated; direct reads and writes only) every QoS 1 PUBLISH is on disk before its PUBACK.
 */
export function startBarePubackServer(mode: BareReadMode, port = 0, durableFile?: string): Promise<{ port: number; close(): void }> {
  if (durableFile !== undefined && mode !== 'direct') throw new Error('bare-puback-server: a durable server reads and writes directly');
  const durable = durableFile === undefined
    ? undefined
    : { fd: openSync(durableFile, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_DSYNC, 0o644), offset: 0 };
  const server = createServer({ noDelay: true }, (socket) => serve(socket, mode, durable));
  server.once('close', () => { if (durable !== undefined) closeSync(durable.fd); });
  return new Promise((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') return reject(new Error('no TCP address'));
      resolvePromise({ port: address.port, close: () => server.close() });
    });
  });
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  const usage = 'usage: bare-puback-server.js data|direct [port] | durable FILE [port]';
  const [mode, ...rest] = process.argv.slice(2);
  let started;
  if (mode === 'data' || mode === 'direct') started = startBarePubackServer(mode, Number(rest[0] ?? 0));
  else if (mode === 'durable' && rest[0] !== undefined) started = startBarePubackServer('direct', Number(rest[1] ?? 0), rest[0]);
  else throw new Error(usage);
  // A bench's CAIRN_STAGE_TIMING=FILE: its round trips timed stage by stage with Cairn's clock and percentiles, the
  // report written at exit (on SIGTERM too, as the bench stops it).
  enableStageTimingFrom(process.env);
  if (process.env[stageTimingVariable] !== undefined) process.once('SIGTERM', () => process.exit(0));
  const { port } = await started;
  process.stdout.write(`${JSON.stringify({ port })}\n`);
}
