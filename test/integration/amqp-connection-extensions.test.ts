/**
 * RabbitMQ's connection-level extensions with amqplib: connection.update-secret
 * (the new secret is checked as the logged-in user's password: update-secret-ok,
 * or the connection closed with 530 NOT_ALLOWED) and the capabilities that
 * connection.start announces for what Cairn now does.
 */
import amqp from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { serverCapabilities } from '../../src/protocols/amqp/server-properties.js';
import { EmbeddedAmqpBroker } from '../support/embedded-amqp-broker.js';
import { writeUsersFile } from '../support/edge-broker.js';
import { tempDirectory } from '../support/kit.js';

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

describe('capabilities', () => {
  it('connection.start announces direct_reply_to and consumer_priorities', () => {
    expect(serverCapabilities).toMatchObject({ direct_reply_to: true, consumer_priorities: true });
  });
});
