/**
 * An MQTT publish's payload may be lent (a view of a socket read, reused once the publish returns:
 * MqttIncomingPublish). The core copies it only when it keeps the message: a QoS 0 message that only
 * live sessions and shared groups take goes to their links as the lent view (each link encodes it
 * during sendPublish); what outlives the call (a retained value, a QoS 1 message, an AMQP queue's
 * copy) holds bytes of its own, intact after the publisher's buffer is overwritten.
 */
import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import type { MqttClientLink, MqttOutgoingPublish } from '../../src/core/api.js';
import { MemoryLog } from '../../src/core/record-log.js';

/** A link that, as a connection does, takes the payload's bytes while sendPublish runs; it also keeps what it was given. */
class EncodingLink implements MqttClientLink {
  readonly given: MqttOutgoingPublish[] = [];
  readonly encoded: string[] = [];
  sendPublish(publish: MqttOutgoingPublish): boolean {
    this.given.push(publish);
    this.encoded.push(Buffer.from(publish.payload).toString());
    return true;
  }
  sendPubrel(): void {}
  takenOver(): undefined { return undefined; }
  readFailed(error: Error): void { throw error; }
}

/** A publisher's read buffer: the payload is a view of it, overwritten by the next read. */
function lentRead(text: string): { payload: Buffer; overwrite(): void } {
  const read = Buffer.alloc(1024, 0x21);
  const payload = read.subarray(100, 100 + Buffer.byteLength(text));
  payload.write(text);
  return { payload, overwrite: () => read.fill(0x3f) };
}

async function connected(broker: Broker, clientId: string, link: MqttClientLink, filters: Array<{ filter: string; qos: 0 | 1 }> = []) {
  const { session, durable } = broker.mqtt.connect(clientId, true, link);
  await durable;
  session.start();
  if (filters.length > 0) await session.subscribe(filters).durable;
  return session;
}

describe('a lent MQTT payload', () => {
  it('goes uncopied to the live sessions of a QoS 0 message that nothing keeps', async () => {
    const broker = Broker.open({ log: new MemoryLog() });
    const subscriber = new EncodingLink();
    const other = new EncodingLink();
    await connected(broker, 'sub', subscriber, [{ filter: 'live/t', qos: 0 }]);
    await connected(broker, 'other', other, [{ filter: 'live/#', qos: 1 }]);
    const member = new EncodingLink();
    await connected(broker, 'member', member, [{ filter: '$share/g/live/t', qos: 1 }]);
    const publisher = await connected(broker, 'pub', new EncodingLink());
    const read = lentRead('sent once');
    publisher.publish({ topic: 'live/t', payload: read.payload, qos: 0, retain: false });
    read.overwrite();
    for (const link of [subscriber, other, member]) {
      expect(link.encoded).toEqual(['sent once']);
      expect(link.given[0]!.payload.buffer).toBe(read.payload.buffer);
    }
  });

  it('is copied when something keeps the message: a retained value, a QoS 1 message, an AMQP queue', async () => {
    const broker = Broker.open({ log: new MemoryLog() });
    await broker.amqp.declareQueue('bridged', { passive: false, durable: false, exclusive: false, autoDelete: false, arguments: {}, owner: 'o' }).durable;
    await broker.amqp.bindQueue('bridged', 'amq.topic', 'kept.queue', 'o');
    const live = new EncodingLink();
    await connected(broker, 'live', live, [{ filter: 'kept/#', qos: 1 }]);
    const publisher = await connected(broker, 'pub', new EncodingLink());
    const cases = [
      { topic: 'kept/retained', qos: 0, retain: true },
      { topic: 'kept/qos1', qos: 1, retain: false, packetId: 1 },
      { topic: 'kept/queue', qos: 0, retain: false },
    ] as const;
    for (const publish of cases) {
      const read = lentRead(`the value of ${publish.topic}`);
      publisher.publish({ ...publish, payload: read.payload });
      read.overwrite();
    }
    await broker.flush();
    // The QoS 1 message as the live session's link got it: the core keeps it until PUBACK (and resends it, DUP).
    expect(live.given.filter((publish) => publish.qos === 1).map((publish) => Buffer.from(publish.payload).toString())).toEqual(['the value of kept/qos1']);
    expect(live.encoded).toEqual(cases.map((c) => `the value of ${c.topic}`));
    const late = new EncodingLink();
    const lateSession = await connected(broker, 'late', late);
    const subscribed = lateSession.subscribe([{ filter: 'kept/retained', qos: 0 }]);
    await subscribed.durable;
    lateSession.sendRetained(subscribed.retainedFilters);
    expect(late.encoded).toEqual(['the value of kept/retained']);
    const got = broker.amqp.get('bridged', { noAck: true, owner: 'o' }).delivery;
    expect(got === undefined ? undefined : Buffer.from(got.message.body).toString()).toBe('the value of kept/queue');
  });
});
