/**
 * AMQP durability proven by SIGKILL, the reference article's scenario: the
 * broker runs as a child process (`cairn serve`, the built dist/, so run
 * `npm run build` first as `npm test` does), three persistent invoices go to
 * a durable queue, a transient draft to the same queue and a message to a
 * transient queue, all with publisher confirms; then kill -9 and a restart.
 * The invoices come back with their properties, the draft and the transient
 * queue do not; an invoice acked before the kill never returns.
 */
import amqp, { type ChannelModel } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { logPosition, untilDurable } from '../support/broker-log-position.js';
import { startBroker, tempDataDir, type BrokerProcess } from '../support/broker-process.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function broker(dir: string): Promise<BrokerProcess> {
  const running = await startBroker(dir, ['--mqtt-port', 'off']);
  cleanups.push(() => running.kill());
  return running;
}


async function connect(port: number): Promise<ChannelModel> {
  const connection = await amqp.connect(`amqp://127.0.0.1:${port}`);
  connection.on('error', () => undefined);
  cleanups.push(() => connection.close().catch(() => undefined));
  return connection;
}

describe('AMQP across kill -9', () => {
  it('persistent messages in a durable queue survive with their properties; transient ones and transient queues do not; acked ones stay gone', async () => {
    const data = tempDataDir('cairn-amqp-crash-');
    cleanups.push(() => data.remove());
    let running = await broker(data.dir);

    const channel = await (await connect(running.amqpPort)).createConfirmChannel();
    await channel.assertQueue('invoices', { durable: true });
    await channel.assertQueue('scratch', { durable: false });
    for (const invoice of ['invoice-1', 'invoice-2', 'invoice-3', 'invoice-4']) {
      channel.sendToQueue('invoices', Buffer.from(invoice), { persistent: true, contentType: 'text/plain' });
    }
    channel.sendToQueue('invoices', Buffer.from('draft'), { deliveryMode: 1, contentType: 'text/plain' });
    channel.sendToQueue('scratch', Buffer.from('scratch'), { persistent: true });
    // Every confirm received means fsynced: from here on a SIGKILL must not lose them.
    await channel.waitForConfirms();
    const first = await channel.get('invoices');
    if (first === false) throw new Error('invoices is empty');
    expect(first.content.toString()).toBe('invoice-1');
    const beforeAck = (await logPosition(running)).nextLsn - 1;
    channel.ack(first);
    // The ack record is written without a waiter: kill once it is appended and durable.
    await untilDurable(running, 'the ack of invoice-1', beforeAck);

    await running.kill();
    running = await broker(data.dir);
    expect(running.output.join('\n')).toMatch(/AMQP recovered 1 durable queues, 3 messages/);

    const after = await (await connect(running.amqpPort)).createChannel();
    after.on('error', () => undefined);
    const recovered: Array<[string, string | undefined, number | undefined]> = [];
    for (;;) {
      const message = await after.get('invoices', { noAck: true });
      if (message === false) break;
      recovered.push([message.content.toString(), message.properties.contentType as string | undefined, message.properties.deliveryMode as number | undefined]);
    }
    expect(recovered).toEqual([
      ['invoice-2', 'text/plain', 2],
      ['invoice-3', 'text/plain', 2],
      ['invoice-4', 'text/plain', 2],
    ]);
    const gone = await after.checkQueue('scratch').then(() => undefined, (error: unknown) => error);
    expect(gone).toMatchObject({ code: 404 });
  });
});
