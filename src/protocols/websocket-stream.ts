/**
 * A WebSocket as the byte stream a protocol connection reads and writes,
 * as MQTT over WebSocket defines it [MQTT-6.0]: the binary frames in either
 * direction carry one continuous packet stream, with no relation between
 * frame and packet boundaries.
 *
 * - Binary frames in → bytes pushed; a text frame closes the connection
 *   [MQTT-6.0.0-1]. When the reader stops (pause, or a full buffer) the
 *   WebSocket stops reading its socket, so TCP pushes back on the client.
 * - Writes out → one binary frame per write; the writes of one cork (what a
 *   protocol produces in one tick) leave as one frame (_writev).
 * - end() sends a close frame and finishes once the close handshake is done;
 *   destroy() cuts the socket. When the peer closes, the stream ends after
 *   the data already received, then emits 'close', as a TCP socket does.
 */
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';

/** WebSocket close code 1003: "received a type of data it cannot accept". */
const unsupportedDataCode = 1003;

export class WebSocketStream extends Duplex {
  constructor(
    private readonly webSocket: WebSocket,
    /** The TCP (or TLS) socket under the WebSocket: its addresses and byte counts are this stream's. */
    private readonly socket: Socket,
  ) {
    super({ allowHalfOpen: false });
    webSocket.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
      if (!isBinary) {
        webSocket.close(unsupportedDataCode, 'MQTT needs binary frames [MQTT-6.0.0-1]');
        this.destroy();
        return;
      }
      if (!this.push(toBuffer(data))) webSocket.pause();
    });
    webSocket.on('error', (error: Error) => this.destroy(error));
    // As a TCP socket does: the end of the data first, 'close' once it has been read (autoDestroy).
    webSocket.on('close', () => this.push(null));
  }

  get remoteAddress(): string | undefined {
    return this.socket.remoteAddress;
  }

  get remotePort(): number | undefined {
    return this.socket.remotePort;
  }

  get localAddress(): string | undefined {
    return this.socket.localAddress;
  }

  get localPort(): number | undefined {
    return this.socket.localPort;
  }

  /** Bytes on the wire, WebSocket framing included. */
  get bytesRead(): number {
    return this.socket.bytesRead;
  }

  get bytesWritten(): number {
    return this.socket.bytesWritten;
  }

  override _read(): void {
    if (this.webSocket.isPaused) this.webSocket.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.webSocket.send(chunk, { binary: true }, callback);
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, callback: (error?: Error | null) => void): void {
    this.webSocket.send(Buffer.concat(chunks.map(({ chunk }) => chunk)), { binary: true }, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.webSocket.readyState === this.webSocket.CLOSED) return callback();
    this.webSocket.once('close', () => callback());
    this.webSocket.close(1000);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (this.webSocket.readyState !== this.webSocket.CLOSED) this.webSocket.terminate();
    callback(error);
  }
}

function toBuffer(data: Buffer | ArrayBuffer | Buffer[]): Buffer {
  if (Buffer.isBuffer(data)) return data;
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
}
