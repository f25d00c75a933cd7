/**
 * A raw MQTT 3.1.1 or 5 client over a plain socket, for tests that must control
 * exactly which packets are sent (e.g. withhold a PUBCOMP, resend with DUP).
 * It reuses mqtt-packet's codec; only real clients (MQTT.js) prove compatibility.
 */
import { connect, type Socket } from 'node:net';
import mqttPacket, { type Packet } from 'mqtt-packet';

export class RawMqttClient {
  readonly received: Packet[] = [];
  private waiters: Array<() => void> = [];
  closed = false;

  private constructor(
    private readonly socket: Socket,
    readonly protocolVersion: 4 | 5,
  ) {
    const parser = mqttPacket.parser({ protocolVersion });
    parser.on('packet', (packet: Packet) => {
      this.received.push(packet);
      for (const wake of this.waiters.splice(0)) wake();
    });
    socket.on('data', (chunk) => parser.parse(chunk));
    socket.on('close', () => { this.closed = true; for (const wake of this.waiters.splice(0)) wake(); });
    socket.on('error', () => undefined);
  }

  static open(port: number, protocolVersion: 4 | 5 = 4): Promise<RawMqttClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host: '127.0.0.1', noDelay: true }, () => resolve(new RawMqttClient(socket, protocolVersion)));
      socket.once('error', reject);
    });
  }

  send(packet: Record<string, unknown>): void {
    this.socket.write(mqttPacket.generate(packet as unknown as Packet, { protocolVersion: this.protocolVersion }));
  }

  writeRaw(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  /** Wait for the first received packet (from `from` on) that satisfies `match`. */
  async waitFor(match: (packet: Packet) => boolean, timeoutMs = 5000, from = 0): Promise<Packet> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.slice(from).find(match);
      if (found) return found;
      if (this.closed) throw new Error(`connection closed while waiting; received: ${JSON.stringify(this.received.map((p) => p.cmd))}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting; received: ${JSON.stringify(this.received.map((p) => p.cmd))}`);
      await new Promise<void>((resolve) => { const t = setTimeout(resolve, left); this.waiters.push(() => { clearTimeout(t); resolve(); }); });
    }
  }

  /** Resolves once the broker has closed the connection; rejects after `timeoutMs`. */
  async waitClosed(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`connection still open after ${timeoutMs} ms; received: ${JSON.stringify(this.received.map((p) => p.cmd))}`);
      await new Promise<void>((resolve) => { const t = setTimeout(resolve, left); this.waiters.push(() => { clearTimeout(t); resolve(); }); });
    }
  }

  async connect(clientId: string, clean: boolean, properties?: Record<string, unknown>): Promise<Packet> {
    this.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: this.protocolVersion, clean, clientId, keepalive: 60, ...(properties ? { properties } : {}) });
    return this.waitFor((p) => p.cmd === 'connack');
  }

  /** Half-close: send FIN after what was written, as a client that is done sending does. */
  end(): void {
    this.socket.end();
  }

  close(): void {
    this.socket.destroy();
  }
}
