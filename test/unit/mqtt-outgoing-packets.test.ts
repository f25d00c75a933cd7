/**
 * How a connection's packets reach its socket (outgoing-packets.ts): the
 * packets of one tick in order, in one socket write of one buffer — and
 * for a whole connection (a real broker core on a memory log, the socket an
 * in-process stream that records each write), the PUBACKs of one read leave
 * in one write, never a writev of one chunk per packet; and the PUBACK of a
 * durable publish leaves as soon as its records are durable, not a tick later.
 */
import { Duplex, Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { MemoryLog } from '../../src/core/record-log.js';
import { silentLogger } from '../../src/logger.js';
import { MqttConnection } from '../../src/protocols/mqtt/connection.js';
import { OutgoingPackets } from '../../src/protocols/mqtt/outgoing-packets.js';
import { mqttConnectionContext } from '../../src/protocols/mqtt/server.js';
import { until } from '../support/kit.js';

/** What the socket was handed: one entry per _write, and per _writev the chunks it got together. */
type Handed = Array<{ readonly kind: 'write' | 'writev'; readonly chunks: Buffer[] }>;

function recordingWritable(handed: Handed): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      handed.push({ kind: 'write', chunks: [chunk] });
      callback();
    },
    writev(chunks, callback) {
      handed.push({ kind: 'writev', chunks: chunks.map(({ chunk }) => chunk as Buffer) });
      callback();
    },
  });
}

describe('OutgoingPackets', () => {
  it('hands one packet to the socket as it is, and says when the first packet of a flush arrives', () => {
    const handed: Handed = [];
    const outgoing = new OutgoingPackets(recordingWritable(handed));
    const packet = Buffer.from([0x40, 0x02, 0x00, 0x01]);
    expect(outgoing.add(packet)).toBe(true);
    expect(outgoing.bytes).toBe(4);
    expect(outgoing.flush()).toBe(true);
    expect(handed).toEqual([{ kind: 'write', chunks: [packet] }]);
    expect(handed[0]!.chunks[0]).toBe(packet);
    expect(outgoing.bytes).toBe(0);
    expect(outgoing.flush()).toBe(false);
  });

  it('copies several small packets into one write, in the order they were added', () => {
    const handed: Handed = [];
    const outgoing = new OutgoingPackets(recordingWritable(handed));
    const packets = [1, 2, 3].map((id) => Buffer.from([0x40, 0x02, 0x00, id]));
    expect(packets.map((packet) => outgoing.add(packet))).toEqual([true, false, false]);
    outgoing.flush();
    expect(handed).toEqual([{ kind: 'write', chunks: [Buffer.concat(packets)] }]);
  });

  it('sends packets past 16 KiB together as they are (one writev, no copy), in order', () => {
    const handed: Handed = [];
    const outgoing = new OutgoingPackets(recordingWritable(handed));
    const packets = [Buffer.alloc(10_000, 1), Buffer.alloc(10_000, 2), Buffer.from([3])];
    for (const packet of packets) outgoing.add(packet);
    outgoing.flush();
    expect(handed).toHaveLength(1);
    expect(handed[0]!.kind).toBe('writev');
    expect(handed[0]!.chunks).toHaveLength(3);
    handed[0]!.chunks.forEach((chunk, index) => expect(chunk).toBe(packets[index]));
  });

  /** Reserves `bytes.length` bytes of `outgoing` and fills them, as the codec writes a PUBLISH in place. */
  const writeInPlace = (outgoing: OutgoingPackets, bytes: Buffer): void => {
    const at = outgoing.reserve(bytes.length);
    bytes.copy(outgoing.buffer, at);
  };

  it('hands the packets written in place in one turn to the socket as one piece of the shared buffer, in order with added ones', () => {
    const handed: Handed = [];
    const outgoing = new OutgoingPackets(recordingWritable(handed));
    expect(outgoing.isEmpty).toBe(true);
    writeInPlace(outgoing, Buffer.from('one,'));
    expect(outgoing.isEmpty).toBe(false);
    writeInPlace(outgoing, Buffer.from('two,'));
    expect(outgoing.bytes).toBe(8);
    outgoing.flush();
    expect(handed).toEqual([{ kind: 'write', chunks: [Buffer.from('one,two,')] }]);
    expect(handed[0]!.chunks[0]!.buffer).toBe(outgoing.buffer.buffer);
    writeInPlace(outgoing, Buffer.from('three,'));
    outgoing.add(Buffer.from('added,'));
    writeInPlace(outgoing, Buffer.from('four'));
    outgoing.flush();
    expect(handed.slice(1)).toEqual([{ kind: 'write', chunks: [Buffer.from('three,added,four')] }]);
  });

  it('keeps each connection\'s packets apart and in order when several write in place in turn (a fan-out), and never reuses bytes it handed out', () => {
    const handed = [[], [], []] as Handed[];
    const connections = handed.map((list) => new OutgoingPackets(recordingWritable(list)));
    const expected = handed.map(() => [] as string[]);
    // Enough to fill the shared buffer several times over, with a packet larger than it among them.
    for (let round = 0; round < 400; round++) {
      for (const [index, outgoing] of connections.entries()) {
        if ((round + index) % 7 === 0) continue;
        const text = round === 123 && index === 1 ? 'L'.repeat(100_000) : `${index}:${round}:${'x'.repeat((round * 37) % 500)};`;
        writeInPlace(outgoing, Buffer.from(text));
        expected[index]!.push(text);
      }
      // Some connections flush in the middle (a tick's end for them), the others go on.
      if (round % 50 === 49) connections[round % 3]!.flush();
    }
    for (const outgoing of connections) outgoing.flush();
    handed.forEach((list, index) => {
      expect(Buffer.concat(list.flatMap((write) => write.chunks)).toString()).toBe(expected[index]!.join(''));
    });
  });

  it('drops what it holds when the socket has ended', () => {
    const handed: Handed = [];
    const socket = recordingWritable(handed);
    const outgoing = new OutgoingPackets(socket);
    outgoing.add(Buffer.from([0xd0, 0x00]));
    socket.end();
    expect(outgoing.flush()).toBe(false);
    expect(outgoing.bytes).toBe(0);
    expect(handed).toEqual([]);
  });
});

/** An in-process socket: what the test pushes is what the connection reads; what it writes is recorded. */
class RecordingSocket extends Duplex {
  readonly handed: Handed = [];
  readonly remoteAddress = '127.0.0.1';
  readonly remotePort = 1;
  readonly localAddress = '127.0.0.1';
  readonly localPort = 1883;
  readonly bytesRead = 0;
  readonly bytesWritten = 0;

  override _read(): void {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.handed.push({ kind: 'write', chunks: [chunk] });
    callback();
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, callback: (error?: Error | null) => void): void {
    this.handed.push({ kind: 'writev', chunks: chunks.map(({ chunk }) => chunk) });
    callback();
  }
}

function lengthPrefixed(text: string): Buffer {
  const bytes = Buffer.from(text);
  return Buffer.concat([Buffer.from([bytes.length >> 8, bytes.length & 0xff]), bytes]);
}

/** A QoS 1 PUBLISH of 'x' to t/a with this packet id (nobody subscribes: nothing is written to the log). */
function publishQos1(packetId: number): Buffer {
  const body = Buffer.concat([lengthPrefixed('t/a'), Buffer.from([packetId >> 8, packetId & 0xff]), Buffer.from('x')]);
  return Buffer.concat([Buffer.from([0x32, body.length]), body]);
}

/** A connection of client `clientId` on `socket`, once its CONNACK is written. */
async function connected(broker: Broker, socket: RecordingSocket, clientId: string, cleanSession = true): Promise<MqttConnection> {
  const context = mqttConnectionContext({ core: broker.mqtt, host: '127.0.0.1', port: 0, logger: silentLogger() });
  const connection = new MqttConnection(socket as never, context, () => undefined);
  const connectBody = Buffer.concat([lengthPrefixed('MQTT'), Buffer.from([4, cleanSession ? 0x02 : 0x00, 0, 60]), lengthPrefixed(clientId)]);
  socket.push(Buffer.concat([Buffer.from([0x10, connectBody.length]), connectBody]));
  await until(() => socket.handed.length === 1 && connection.state === 'connected', 'CONNACK written');
  expect(socket.handed[0]!.chunks).toEqual([Buffer.from([0x20, 0x02, 0x00, 0x00])]);
  return connection;
}

describe('MqttConnection writes', () => {
  it('answers the QoS 1 PUBLISHes of one read with one socket write holding their PUBACKs in order', async () => {
    const broker = Broker.open({ log: new MemoryLog() });
    const socket = new RecordingSocket();
    const connection = await connected(broker, socket, 'writer');

    socket.push(Buffer.concat([publishQos1(1), publishQos1(2), publishQos1(3)]));
    // Written in the read's own callback: no tick passes between the PUBLISHes and their PUBACKs.
    expect(socket.handed.slice(1)).toEqual([{ kind: 'write', chunks: [Buffer.from([0x40, 2, 0, 1, 0x40, 2, 0, 2, 0x40, 2, 0, 3])] }]);

    socket.push(publishQos1(4));
    expect(socket.handed.slice(2)).toEqual([{ kind: 'write', chunks: [Buffer.from([0x40, 2, 0, 4])] }]);
    connection.close('server-closing');
  });

  it('writes the PUBACK of a durable publish when its records are durable, before the next tick', async () => {
    const log = new MemoryLog();
    const broker = Broker.open({ log });
    // An offline persistent subscriber of t/a at QoS 1: every publish to t/a is recorded and awaited.
    const subscriberSocket = new RecordingSocket();
    const subscriber = await connected(broker, subscriberSocket, 'keeper', false);
    const subscribeBody = Buffer.concat([Buffer.from([0, 1]), lengthPrefixed('t/a'), Buffer.from([1])]);
    subscriberSocket.push(Buffer.concat([Buffer.from([0x82, subscribeBody.length]), subscribeBody]));
    await until(() => subscriberSocket.handed.length === 2, 'SUBACK written');
    subscriber.close('server-closing');

    const socket = new RecordingSocket();
    const publisher = await connected(broker, socket, 'writer');
    const recordsBefore = log.records.length;
    socket.push(publishQos1(7));
    expect(log.records.length).toBeGreaterThan(recordsBefore); // the message is recorded for the offline session
    expect(socket.handed).toHaveLength(1); // not yet: the record is not durable in the read's callback
    // The memory log's append resolves at once: the PUBACK is on the socket before a tick queued now runs.
    const writtenByNextTick = await new Promise<Handed>((resolve) => process.nextTick(() => resolve(socket.handed.slice(1))));
    expect(writtenByNextTick).toEqual([{ kind: 'write', chunks: [Buffer.from([0x40, 2, 0, 7])] }]);

    // Written where it resolved, it schedules no flush of its own for the tick's end: no flush finds nothing.
    const flush = vi.spyOn(OutgoingPackets.prototype, 'flush');
    try {
      for (const packetId of [8, 9]) {
        socket.push(publishQos1(packetId));
        await until(() => socket.handed.length === packetId - 5, `PUBACK ${packetId} written`);
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(flush.mock.results.filter((result) => result.value === false)).toHaveLength(2); // the reads' own flushes: nothing to write yet
      expect(flush.mock.results.filter((result) => result.value === true)).toHaveLength(2);
    } finally {
      flush.mockRestore();
    }
    publisher.close('server-closing');
  });
});
