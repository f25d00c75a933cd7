/**
 * One malformed or out-of-spec packet closes that connection and nothing else
 * [MQTT-4.8.0-1]: raw bytes after a good CONNECT, over a real socket, against
 * a whole in-process Cairn. Each case checks that the process threw nothing,
 * that the broker closed the connection, that the close was logged below
 * error level (a client's mistake is not the broker's error), and that an
 * MQTT.js client on another connection still publishes and receives QoS 1.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { InProcessCairn, logLevelError } from '../../tools/in-process-cairn.js';
import { MqttCanary } from '../../tools/mqtt-canary.js';
import { ProcessErrorWatch } from '../../tools/process-error-watch.js';
import { RawMqttClient } from '../support/raw-mqtt.js';

let cairn: InProcessCairn;
let canary: MqttCanary;
let processErrors: ProcessErrorWatch;
let raw: RawMqttClient | undefined;

beforeAll(async () => {
  cairn = await InProcessCairn.start();
  canary = await MqttCanary.connect(cairn.mqttPort);
});

afterAll(async () => {
  await canary.stop();
  await cairn.stop();
});

beforeEach(() => {
  processErrors = ProcessErrorWatch.start();
  cairn.logLines.length = 0;
});

afterEach(() => {
  processErrors.stop();
  raw?.close();
  raw = undefined;
});

const hex = (text: string): Buffer => Buffer.from(text.replace(/\s+/g, ''), 'hex');

/** Each: bytes sent after CONNECT/CONNACK, and the rule they break. */
const malformedAfterConnect: ReadonlyArray<readonly [string, string]> = [
  ['PUBLISH QoS 1 without a packet id [MQTT-2.3.1-1]', '32 03 0001 61'],
  ['PUBLISH QoS 2 without a packet id [MQTT-2.3.1-1]', '34 03 0001 61'],
  ['PUBLISH QoS 1 with half a packet id', '32 04 0001 61 00'],
  ['PUBREL without a body [MQTT-3.6.2]', '62 00'],
  ['PUBACK without a packet id [MQTT-3.4.2]', '40 00'],
  ['PUBREC without a packet id [MQTT-3.5.2]', '50 00'],
  ['PUBCOMP without a packet id [MQTT-3.7.2]', '70 00'],
  ['PUBACK with a remaining length of 3 [MQTT-3.4.1]', '40 03 0001 00'],
  ['PUBLISH QoS 1 with packet id 0 [MQTT-2.3.1-1]', '32 05 0001 61 0000'],
  ['PUBACK with packet id 0 [MQTT-2.3.1-1]', '40 02 0000'],
  ['PUBREL with packet id 0 [MQTT-2.3.1-1]', '62 02 0000'],
  ['SUBSCRIBE with packet id 0 [MQTT-2.3.1-1]', '82 06 0000 0001 61 01'],
  ['SUBSCRIBE with no topic filter [MQTT-3.8.3-3]', '82 02 0001'],
  ['UNSUBSCRIBE with no topic filter [MQTT-3.10.3-2]', 'a2 02 0001'],
  ['SUBSCRIBE with a requested QoS of 3 [MQTT-3.8.3-4]', '82 06 0001 0001 61 03'],
  ['PUBLISH whose topic is not well-formed UTF-8 [MQTT-1.5.3-1]', '30 03 0001 ff'],
  ['SUBSCRIBE whose filter is not well-formed UTF-8 [MQTT-1.5.3-1]', '82 06 0001 0001 c3 00'],
  ['UNSUBSCRIBE whose filter is a UTF-16 surrogate in UTF-8 [MQTT-1.5.3-1]', 'a2 07 0001 0003 eda080'],
  ['PUBLISH QoS 0 with DUP set [MQTT-3.3.1-2]', '38 03 0001 61'],
  ['PUBLISH with QoS 3 [MQTT-3.3.1-4]', '36 05 0001 61 0001'],
  ['PUBLISH to a wildcard topic [MQTT-3.3.2-2]', '30 03 0001 23'],
  ['PINGREQ with a body [MQTT-3.12]', 'c0 01 00'],
  ['DISCONNECT with reserved flags [MQTT-2.2.2-2]', 'e1 00'],
  ['a server-only packet: CONNACK', '20 02 0000'],
  ['reserved packet type 0', '00 00'],
  ['reserved packet type 15', 'f0 00'],
];

describe('a malformed packet after CONNECT closes only its connection [MQTT-4.8.0-1]', () => {
  it.each(malformedAfterConnect)('%s', async (_rule, bytes) => {
    raw = await RawMqttClient.open(cairn.mqttPort);
    await raw.connect(`malformed-${Math.random().toString(36).slice(2)}`, true);
    raw.writeRaw(hex(bytes));
    await raw.waitClosed().catch((error: unknown) => {
      throw new Error(`${String(error)}; uncaught in the process: ${processErrors.describe() || 'nothing'}`);
    });

    expect(processErrors.describe()).toBe('');
    expect(raw.received.map((packet) => packet.cmd)).toEqual(['connack']);
    const closeLines = cairn.logLines.filter((line) => line.msg === 'MQTT protocol error, closing');
    expect(closeLines.length).toBe(1);
    expect(closeLines[0]?.level).toBeLessThan(logLevelError);
    expect(cairn.logLines.filter((line) => line.level >= logLevelError)).toEqual([]);
    await canary.roundTrip();
  });
});
