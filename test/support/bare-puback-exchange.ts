/**
 * The byte-level exchange both bare PUBACK servers (tools/bare-puback-server.ts and .c) are checked with: a CONNECT,
 * a QoS 1 PUBLISH written in two parts (split right after its type byte, so the server must wait for its remaining
 * length) and a PINGREQ, over a raw socket; the bytes the server answered, in order.
 */
import { connect as connectTcp } from 'node:net';
import { until } from './kit.js';

/** What a bare server must answer to splitPublishExchange: CONNACK, the PUBACK of packet id 0x1234, PINGRESP. */
export const splitPublishAnswer = [0x20, 0x02, 0x00, 0x00, 0x40, 0x02, 0x12, 0x34, 0xd0, 0x00];

export async function splitPublishExchange(port: number): Promise<number[]> {
  const socket = connectTcp(port, '127.0.0.1');
  socket.setNoDelay(true);
  const received: number[] = [];
  socket.on('data', (chunk: Buffer) => received.push(...chunk));
  try {
    socket.write(Buffer.from([0x10, 0x0d, 0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3c, 0x00, 0x01, 0x62]));
    await until(() => received.length >= 4, 'CONNACK');
    // PUBLISH QoS 1, topic "t", packet id 0x1234, payload "x".
    const publish = Buffer.from([0x32, 0x06, 0x00, 0x01, 0x74, 0x12, 0x34, 0x78]);
    socket.write(publish.subarray(0, 1));
    await new Promise((resolve) => setImmediate(resolve));
    socket.write(publish.subarray(1));
    socket.write(Buffer.from([0xc0, 0x00]));
    await until(() => received.length >= splitPublishAnswer.length, 'PUBACK and PINGRESP');
    return received;
  } finally {
    socket.destroy();
  }
}
