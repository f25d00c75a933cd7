/**
 * RabbitMQ's connection-level extensions with amqplib: connection.update-secret
 * (the new secret is checked as the logged-in user's password: update-secret-ok,
 * or the connection closed with 530 NOT_ALLOWED), connection.blocked /
 * unblocked while the disk-free alarm holds publishers back (free space is
 * injected), and the capabilities that connection.start announces for what
 * Cairn now does.
 */
import amqp from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { serverCapabilities } from '../../src/protocols/amqp/server-properties.js';
import { EmbeddedAmqpBroker } from '../support/embedded-amqp-broker.js';
import { writeUsersFile } from '../support/edge-broker.js';
import { tempDirectory, until } from '../support/kit.js';

const broker = new EmbeddedAmqpBroker();
afterEach(() => broker.cleanUp());

describe('connection.update-secret', () => {
  it('the right password again is update-secret-ok and the connection goes on; a wrong one closes it with 530', async () => {
    const dir = tempDirectory();
    try {
      const users = await writeUsersFile(dir.path, ['app'], 's3cret');
      const cairn = await broker.start(broker.dataDirectory(), ['--users', users]);
      const url = `amqp://app:s3cret@127.0.0.1:${cairn.amqpPort!}`;
      const model = await amqp.connect(url);
      model.on('error', () => undefined);
      await model.updateSecret(Buffer.from('s3cret'), 'token refreshed');
      const ch = await model.createChannel();
      await ch.assertQueue('still-open');

      const other = await amqp.connect(url);
      const closed = new Promise<Error>((resolve) => other.on('error', resolve));
      // Never answered with update-secret-ok: amqplib's promise stays pending, the close is the answer.
      void other.updateSecret(Buffer.from('wrong'), 'token refreshed').catch(() => undefined);
      const error = (await closed) as Error & { code?: number };
      expect(error.code).toBe(530);
      expect(error.message).toContain("Secret update was refused for user 'app'");
      await ch.checkQueue('still-open');
      await model.close();
    } finally {
      dir.remove();
    }
  });
});

describe('connection.blocked (the disk-free alarm)', () => {
  it('a publisher is told when free space falls below the limit, its next publish is held until space is back, consumers go on', async () => {
    const gibibyte = 1024 ** 3;
    let free = 10 * gibibyte;
    const cairn = await broker.start(broker.dataDirectory(), ['--disk-free-limit', '50MB'], { freeBytes: () => Promise.resolve(free), diskFreeCheckIntervalMs: 5 });
    const consumer = await broker.channel(cairn);
    await consumer.assertQueue('work');
    const got: string[] = [];
    await consumer.consume('work', (message) => {
      if (message !== null) got.push(message.content.toString());
    }, { noAck: true });
    const publisherModel = await broker.connect(cairn);
    const events: string[] = [];
    publisherModel.on('blocked', (reason: string) => events.push(`blocked: ${reason}`));
    publisherModel.on('unblocked', () => events.push('unblocked'));
    const publisher = await publisherModel.createConfirmChannel();
    publisher.sendToQueue('work', Buffer.from('before'));
    await publisher.waitForConfirms();

    free = 1024 * 1024;
    await until(() => events.length === 1, 'connection.blocked');
    expect(events).toEqual(['blocked: low on disk']);
    // The first publish during the alarm is taken; then the connection reads nothing more.
    publisher.sendToQueue('work', Buffer.from('during-1'));
    await until(() => got.includes('during-1'), 'the first publish during the alarm delivered');
    publisher.sendToQueue('work', Buffer.from('during-2'));
    const sameConnection = publisherModel.createChannel().then((ch) => ch.checkQueue('work'));
    let answered = false;
    void sameConnection.then(() => { answered = true; });
    // Round trips on another connection as the clock: the held publisher gets no answer meanwhile.
    for (let i = 0; i < 20; i++) await consumer.checkQueue('work');
    expect(answered).toBe(false);
    expect(got).toEqual(['before', 'during-1']);

    free = 10 * gibibyte;
    await until(() => events.length === 2 && got.includes('during-2'), 'unblocked, and the held publish delivered');
    expect(events).toEqual(['blocked: low on disk', 'unblocked']);
    await sameConnection;
    await publisher.waitForConfirms();
    expect(got).toEqual(['before', 'during-1', 'during-2']);
  });
});

describe('capabilities', () => {
  it('connection.start announces direct_reply_to, consumer_priorities and connection.blocked', () => {
    expect(serverCapabilities).toMatchObject({ direct_reply_to: true, consumer_priorities: true, 'connection.blocked': true });
  });
});
