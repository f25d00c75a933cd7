/**
 * Exchange-to-exchange bindings, alternate exchanges, internal exchanges and
 * the reply codes around them (issue 13), with amqplib over real sockets
 * against a broker on a data directory (durable topology survives restarts):
 * a topic → fanout chain delivers end to end, a binding loop delivers once,
 * a message reaching a queue by two paths arrives once, exchange.unbind stops
 * it, an alternate exchange catches what the exchange routes nowhere,
 * publishing to an internal exchange is 403, exchange.delete of a missing one
 * is delete-ok, an unknown exchange type closes the connection with 503, and
 * the empty queue name with no queue declared is a 404 channel error.
 */
import type { Channel, ChannelModel } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { drain, EmbeddedAmqpBroker } from '../support/embedded-amqp-broker.js';
import { until } from '../support/kit.js';

const embedded = new EmbeddedAmqpBroker();
afterEach(() => embedded.cleanUp());


/** A round trip on the channel, so that publishes sent before it have been routed. */
async function settled(channel: Channel, queue: string): Promise<number> {
  return (await channel.checkQueue(queue)).messageCount;
}

function closed(target: Channel | ChannelModel): Promise<Error & { code?: number }> {
  return new Promise((resolve) => target.once('error', resolve));
}

async function chain(channel: Channel): Promise<void> {
  await channel.assertExchange('events', 'topic', { durable: true });
  await channel.assertExchange('audit-fanout', 'fanout', { durable: true });
  await channel.bindExchange('audit-fanout', 'events', 'orders.#');
  for (const queue of ['audit-a', 'audit-b']) {
    await channel.assertQueue(queue, { durable: true });
    await channel.bindQueue(queue, 'audit-fanout', '');
  }
}

describe('exchange-to-exchange bindings', () => {
  it('a topic exchange bound to a fanout exchange delivers end to end, durably, and exchange.unbind stops it', async () => {
    const directory = embedded.dataDirectory();
    let cairn = await embedded.start(directory);
    let channel = await embedded.channel(cairn);
    await chain(channel);
    channel.publish('events', 'orders.created', Buffer.from('o-1'), { persistent: true });
    channel.publish('events', 'users.created', Buffer.from('u-1'), { persistent: true });
    expect(await settled(channel, 'audit-a')).toBe(1);
    expect(await drain(channel, 'audit-a')).toEqual(['o-1']);
    expect(await drain(channel, 'audit-b')).toEqual(['o-1']);

    // The binding is a record: replayed after a restart.
    await embedded.stop();
    cairn = await embedded.start(directory);
    channel = await embedded.channel(cairn);
    channel.publish('events', 'orders.paid', Buffer.from('o-2'), { persistent: true });
    await until(async () => (await settled(channel, 'audit-b')) === 1, 'the chain routes after a restart');
    expect(await drain(channel, 'audit-a')).toEqual(['o-2']);
    expect(await drain(channel, 'audit-b')).toEqual(['o-2']);

    await channel.unbindExchange('audit-fanout', 'events', 'orders.#');
    channel.publish('events', 'orders.paid', Buffer.from('o-3'), { persistent: true });
    expect(await settled(channel, 'audit-a')).toBe(0);
    await embedded.stop();
    cairn = await embedded.start(directory);
    channel = await embedded.channel(cairn);
    channel.publish('events', 'orders.paid', Buffer.from('o-4'), { persistent: true });
    expect(await settled(channel, 'audit-a')).toBe(0);
  });

  it('a loop of bindings delivers once, and a queue reached by two paths gets the message once', async () => {
    const cairn = await embedded.start(embedded.dataDirectory());
    const channel = await embedded.channel(cairn);
    await channel.assertExchange('ring-a', 'fanout', { durable: false });
    await channel.assertExchange('ring-b', 'fanout', { durable: false });
    await channel.bindExchange('ring-b', 'ring-a', '');
    await channel.bindExchange('ring-a', 'ring-b', '');
    await channel.assertQueue('ring-queue', { durable: false });
    await channel.bindQueue('ring-queue', 'ring-a', '');
    await channel.bindQueue('ring-queue', 'ring-b', '');
    channel.publish('ring-a', 'k', Buffer.from('once'));
    channel.publish('ring-b', 'k', Buffer.from('twice?'));
    expect(await settled(channel, 'ring-queue')).toBe(2);
    expect(await drain(channel, 'ring-queue')).toEqual(['once', 'twice?']);
  });

  it('exchange.delete removes its bindings as a destination; exchange.delete of a missing exchange is delete-ok', async () => {
    const directory = embedded.dataDirectory();
    let cairn = await embedded.start(directory);
    let channel = await embedded.channel(cairn);
    await chain(channel);
    await channel.deleteExchange('audit-fanout');
    await channel.deleteExchange('audit-fanout');
    await channel.deleteExchange('never-declared');
    channel.publish('events', 'orders.created', Buffer.from('lost'), { persistent: true });
    expect(await settled(channel, 'audit-a')).toBe(0);
    await embedded.stop();
    cairn = await embedded.start(directory);
    channel = await embedded.channel(cairn);
    await channel.assertExchange('audit-fanout', 'fanout', { durable: true });
    await channel.bindQueue('audit-a', 'audit-fanout', '');
    channel.publish('events', 'orders.created', Buffer.from('still lost'), { persistent: true });
    expect(await settled(channel, 'audit-a')).toBe(0);
  });
});

describe('alternate and internal exchanges', () => {
  it('a message the exchange routes nowhere goes to its alternate exchange; a routed one does not; after a restart too', async () => {
    const directory = embedded.dataDirectory();
    let cairn = await embedded.start(directory);
    let channel = await embedded.channel(cairn);
    await channel.assertExchange('unrouted', 'fanout', { durable: true });
    await channel.assertQueue('unrouted-messages', { durable: true });
    await channel.bindQueue('unrouted-messages', 'unrouted', '');
    await channel.assertExchange('orders', 'direct', { durable: true, alternateExchange: 'unrouted' });
    await channel.assertQueue('paid', { durable: true });
    await channel.bindQueue('paid', 'orders', 'paid');
    channel.publish('orders', 'paid', Buffer.from('p-1'), { persistent: true });
    channel.publish('orders', 'refunded', Buffer.from('r-1'), { persistent: true });
    expect(await settled(channel, 'paid')).toBe(1);
    expect(await drain(channel, 'unrouted-messages')).toEqual(['r-1']);
    // Redeclared with another alternate exchange: inequivalent, 406.
    const refused = closed(channel);
    channel.assertExchange('orders', 'direct', { durable: true, alternateExchange: 'elsewhere' }).catch(() => undefined);
    expect((await refused).code).toBe(406);

    await embedded.stop();
    cairn = await embedded.start(directory);
    channel = await embedded.channel(cairn);
    channel.publish('orders', 'cancelled', Buffer.from('c-1'), { persistent: true });
    await until(async () => (await settled(channel, 'unrouted-messages')) === 1, 'the alternate exchange after a restart');
    expect(await drain(channel, 'unrouted-messages')).toEqual(['c-1']);
  });

  it('mandatory publishes caught by the alternate exchange are not returned', async () => {
    const cairn = await embedded.start(embedded.dataDirectory());
    const channel = await embedded.channel(cairn);
    await channel.assertExchange('catch-all', 'fanout', { durable: false });
    await channel.assertQueue('caught', { durable: false });
    await channel.bindQueue('caught', 'catch-all', '');
    await channel.assertExchange('picky', 'direct', { durable: false, alternateExchange: 'catch-all' });
    const returned: string[] = [];
    channel.on('return', (message: { content: Buffer }) => returned.push(message.content.toString()));
    channel.publish('picky', 'nobody', Buffer.from('m'), { mandatory: true });
    expect(await settled(channel, 'caught')).toBe(1);
    expect(returned).toEqual([]);
  });

  it('publishing to an internal exchange is 403 ACCESS_REFUSED; messages routed to it through a binding get through', async () => {
    const cairn = await embedded.start(embedded.dataDirectory());
    const channel = await embedded.channel(cairn);
    await channel.assertExchange('inner', 'fanout', { durable: false, internal: true });
    await channel.assertExchange('front', 'direct', { durable: false });
    await channel.bindExchange('inner', 'front', 'k');
    await channel.assertQueue('behind', { durable: false });
    await channel.bindQueue('behind', 'inner', '');
    channel.publish('front', 'k', Buffer.from('through'));
    expect(await drain(channel, 'behind')).toEqual(['through']);
    const failure = closed(channel);
    channel.publish('inner', 'k', Buffer.from('direct'));
    const error = await failure;
    expect(error.code).toBe(403);
    expect(error.message).toMatch(/ACCESS_REFUSED - cannot publish to internal exchange 'inner'/);
  });
});

describe('reply codes', () => {
  it('an unknown exchange type closes the connection with 503 COMMAND_INVALID', async () => {
    const cairn = await embedded.start(embedded.dataDirectory());
    const connection = await embedded.connect(cairn);
    const channel = await connection.createChannel();
    channel.on('error', () => undefined);
    const failure = closed(connection);
    channel.assertExchange('odd', 'x-consistent-hash').catch(() => undefined);
    const error = await failure;
    expect(error.code).toBe(503);
    expect(error.message).toMatch(/COMMAND_INVALID - unknown exchange type 'x-consistent-hash'/);
  });

  it.each([
    ['basic.get', (channel: Channel) => channel.get('')],
    ['basic.consume', (channel: Channel) => channel.consume('', () => undefined)],
    ['queue.bind', (channel: Channel) => channel.bindQueue('', 'amq.direct', 'k')],
    ['queue.purge', (channel: Channel) => channel.purgeQueue('')],
  ] as const)('%s with the empty queue name and no queue declared on the channel is a 404 channel error; the connection lives on', async (_name, call) => {
    const cairn = await embedded.start(embedded.dataDirectory());
    const connection = await embedded.connect(cairn);
    const channel = await connection.createChannel();
    const failure = closed(channel);
    (call(channel) as Promise<unknown>).catch(() => undefined);
    const error = await failure;
    expect(error.code).toBe(404);
    expect(error.message).toMatch(/NOT_FOUND - no previously declared queue/);
    const other = await connection.createChannel();
    expect((await other.assertQueue('', { exclusive: true })).queue).toMatch(/^amq\.gen-/);
  });

  it('connection.start capabilities say what Cairn does', async () => {
    const cairn = await embedded.start(embedded.dataDirectory());
    const connection = await embedded.connect(cairn);
    expect(connection.connection.serverProperties.capabilities).toMatchObject({
      exchange_exchange_bindings: true, 'basic.nack': true, consumer_cancel_notify: true, publisher_confirms: true,
      per_consumer_qos: true, authentication_failure_close: true,
    });
  });
});
