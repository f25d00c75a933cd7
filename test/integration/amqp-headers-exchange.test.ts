/**
 * The headers exchange with amqplib over real sockets (issue 13): a table of
 * bindings (x-match all / any / all-with-x / any-with-x, a default, a presence
 * test, numbers against strings) and messages, each queue's contents compared
 * with RabbitMQ's documented rules; a bad x-match is 406; bindings with
 * arguments are durable (replayed after a restart) and exchange.unbind with the
 * same arguments removes exactly that binding. The matcher's own property
 * test is test/property/headers-match.test.ts.
 */
import type { Channel } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { drain, EmbeddedAmqpBroker } from '../support/embedded-amqp-broker.js';
import { until } from '../support/kit.js';

const embedded = new EmbeddedAmqpBroker();
afterEach(() => embedded.cleanUp());


/** Binding arguments by queue. */
const bindings: Record<string, Record<string, unknown>> = {
  'all-pdf-report': { 'x-match': 'all', format: 'pdf', type: 'report' },
  'default-is-all': { format: 'pdf', type: 'report' },
  'any-pdf-or-log': { 'x-match': 'any', format: 'pdf', type: 'log' },
  'all-only-x': { 'x-match': 'all', 'x-tenant': 'acme' },
  'any-only-x': { 'x-match': 'any', 'x-tenant': 'acme' },
  'all-with-x': { 'x-match': 'all-with-x', 'x-tenant': 'acme', format: 'pdf' },
  'any-with-x': { 'x-match': 'any-with-x', 'x-tenant': 'acme', format: 'zip' },
  'number-one': { 'x-match': 'all', copies: 1 },
  'has-flag': { 'x-match': 'all', flag: null },
};

const messages: ReadonlyArray<readonly [body: string, headers: Record<string, unknown> | undefined]> = [
  ['m1', { format: 'pdf', type: 'report' }],
  ['m2', { format: 'pdf' }],
  ['m3', { format: 'pdf', type: 'report', extra: 'yes', 'x-tenant': 'acme' }],
  ['m4', { type: 'log' }],
  ['m5', { 'x-tenant': 'acme' }],
  ['m6', { 'x-tenant': 'other', format: 'pdf' }],
  ['m7', { copies: 1 }],
  ['m8', { copies: '1', flag: 'anything' }],
  ['m9', undefined],
];

// RabbitMQ's rules, applied by hand to the table above.
const expected: Record<string, string[]> = {
  'all-pdf-report': ['m1', 'm3'],
  'default-is-all': ['m1', 'm3'],
  'any-pdf-or-log': ['m1', 'm2', 'm3', 'm4', 'm6'],
  'all-only-x': ['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8', 'm9'],
  'any-only-x': [],
  'all-with-x': ['m3'],
  'any-with-x': ['m3', 'm5'],
  'number-one': ['m7'],
  'has-flag': ['m8'],
};

async function bindAll(channel: Channel, exchange: string): Promise<void> {
  for (const [queue, args] of Object.entries(bindings)) {
    await channel.assertQueue(queue, { durable: true });
    await channel.bindQueue(queue, exchange, '', args);
  }
}

async function publishAndCollect(channel: Channel, exchange: string): Promise<Record<string, string[]>> {
  for (const [body, headers] of messages) channel.publish(exchange, 'ignored', Buffer.from(body), { persistent: true, ...(headers === undefined ? {} : { headers }) });
  // The first queue's count is a round trip after every publish.
  await until(async () => (await channel.checkQueue('all-only-x')).messageCount === messages.length, 'every message routed');
  const got: Record<string, string[]> = {};
  for (const queue of Object.keys(bindings)) got[queue] = await drain(channel, queue);
  return got;
}

describe('headers exchange', () => {
  it('routes by x-match all / any / all-with-x / any-with-x as RabbitMQ documents; bindings with arguments survive a restart', async () => {
    const directory = embedded.dataDirectory();
    let cairn = await embedded.start(directory);
    let channel = await embedded.channel(cairn);
    await channel.assertExchange('documents', 'headers', { durable: true });
    await bindAll(channel, 'documents');
    expect(await publishAndCollect(channel, 'documents')).toEqual(expected);

    await embedded.stop();
    cairn = await embedded.start(directory);
    channel = await embedded.channel(cairn);
    expect(await publishAndCollect(channel, 'documents')).toEqual(expected);
  });

  it('amq.headers and amq.match exist and route by headers', async () => {
    const cairn = await embedded.start(embedded.dataDirectory());
    const channel = await embedded.channel(cairn);
    for (const exchange of ['amq.headers', 'amq.match']) {
      await channel.checkExchange(exchange);
      await bindAll(channel, exchange);
      expect(await publishAndCollect(channel, exchange)).toEqual(expected);
      for (const [queue, args] of Object.entries(bindings)) await channel.unbindQueue(queue, exchange, '', args);
    }
  });

  it('two bindings differing only in arguments are two bindings; unbinding one with its arguments leaves the other, after a restart too', async () => {
    const directory = embedded.dataDirectory();
    let cairn = await embedded.start(directory);
    let channel = await embedded.channel(cairn);
    await channel.assertExchange('h', 'headers', { durable: true });
    await channel.assertQueue('either', { durable: true });
    await channel.bindQueue('either', 'h', '', { colour: 'red' });
    await channel.bindQueue('either', 'h', '', { colour: 'blue' });
    await channel.unbindQueue('either', 'h', '', { colour: 'red' });
    await embedded.stop();
    cairn = await embedded.start(directory);
    channel = await embedded.channel(cairn);
    channel.publish('h', '', Buffer.from('red'), { headers: { colour: 'red' }, persistent: true });
    channel.publish('h', '', Buffer.from('blue'), { headers: { colour: 'blue' }, persistent: true });
    await until(async () => (await channel.checkQueue('either')).messageCount >= 1, 'the blue message');
    expect(await drain(channel, 'either')).toEqual(['blue']);
  });

  it('a binding with an invalid x-match is refused with 406', async () => {
    const cairn = await embedded.start(embedded.dataDirectory());
    const connection = await embedded.connect(cairn);
    const channel = await connection.createChannel();
    await channel.assertExchange('h', 'headers', { durable: false });
    await channel.assertQueue('q', { durable: false });
    const failure = new Promise<Error & { code?: number }>((resolve) => channel.once('error', resolve));
    channel.bindQueue('q', 'h', '', { 'x-match': 'some' }).catch(() => undefined);
    const error = await failure;
    expect(error.code).toBe(406);
    expect(error.message).toMatch(/Invalid x-match field value/);
  });
});
