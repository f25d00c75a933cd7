/**
 * RabbitMQ's own command-line tool, `rabbitmqadmin` (shipped by Debian's
 * rabbitmq-server package), against an in-process Cairn: it lists, declares,
 * publishes, browses (get with ack_requeue_true), consumes (ack_requeue_false),
 * binds, purges, closes a connection and deletes — parsing Cairn's answers
 * with its own code, so a shape that differs from RabbitMQ's fails here.
 *
 * Never skipped: without rabbitmqadmin the suite fails saying how to install it
 * (.ci/run installs it when missing).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { startCairn, type RunningCairn } from '../../src/server.js';
import { tempDirectory, until } from '../support/kit.js';

const rabbitmqadminPath = ['/usr/bin/rabbitmqadmin', '/usr/sbin/rabbitmqadmin', '/usr/local/bin/rabbitmqadmin'].find((candidate) => existsSync(candidate));

function rabbitmqadmin(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(rabbitmqadminPath!, ['-H', '127.0.0.1', '-P', String(port), ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`rabbitmqadmin ${args.join(' ')} failed: ${error.message}\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
}

/** rabbitmqadmin's tab-separated format (-f tsv): a header line, then one line per item. */
function rows(tsv: string): Array<Record<string, string>> {
  const [header, ...lines] = tsv.trimEnd().split('\n');
  if (header === undefined || header === 'No items') return [];
  const columns = header.split('\t');
  return lines.map((line) => Object.fromEntries(line.split('\t').map((value, index) => [columns[index] ?? String(index), value])));
}

describe('rabbitmqadmin against Cairn', () => {
  const data = tempDirectory('cairn-rabbitmqadmin-');
  let cairn: RunningCairn;
  let port: number;

  beforeAll(async () => {
    if (rabbitmqadminPath === undefined) {
      throw new Error('rabbitmqadmin is not installed: it comes with Debian\'s rabbitmq-server package — apt-get install -y --no-install-recommends rabbitmq-server (.ci/run does this, with the service kept from starting)');
    }
    cairn = await startCairn(parseServeArgs(['--data', data.path, '--mqtt-port', '0', '--amqp-port', '0', '--http-port', '0'], {}), silentLogger());
    port = cairn.httpPort!;
  });
  afterAll(async () => {
    await cairn?.close();
    data.remove();
  });

  it('declares a durable queue, publishes to it, browses it without consuming, consumes, deletes it', async () => {
    expect(await rabbitmqadmin(port, 'list', 'queues')).toContain('No items');
    expect(await rabbitmqadmin(port, 'declare', 'queue', 'name=q', 'durable=true')).toContain('queue declared');
    expect(cairn.broker.state.queues.has('q')).toBe(true); // a record in the log, as a client's queue.declare
    expect(await rabbitmqadmin(port, 'publish', 'routing_key=q', 'payload=x')).toContain('Message published');
    expect(await rabbitmqadmin(port, 'publish', 'routing_key=q', 'payload=second', 'properties={"delivery_mode":2,"content_type":"text/plain"}')).toContain('Message published');
    expect(await rabbitmqadmin(port, 'publish', 'routing_key=nowhere', 'payload=x')).toContain('Message published but NOT routed');
    expect(rows(await rabbitmqadmin(port, '-f', 'tsv', 'list', 'queues'))).toEqual([{ name: 'q', messages: '2' }]);

    const browsed = rows(await rabbitmqadmin(port, '-f', 'tsv', 'get', 'queue=q', 'ackmode=ack_requeue_true', 'count=5'));
    expect(browsed.map((row) => [row['payload'], row['payload_bytes'], row['routing_key'], row['redelivered']])).toEqual([['x', '1', 'q', 'False'], ['second', '6', 'q', 'False']]);
    expect(rows(await rabbitmqadmin(port, '-f', 'tsv', 'list', 'queues', 'name', 'messages_ready'))).toEqual([{ name: 'q', messages_ready: '2' }]);
    // Only the persistent message reached the log (delivery_mode=2 into a durable queue).
    expect(cairn.broker.state.queues.get('q')?.pending.size).toBe(1);

    const consumed = rows(await rabbitmqadmin(port, '-f', 'tsv', 'get', 'queue=q', 'ackmode=ack_requeue_false'));
    expect(consumed.map((row) => [row['payload'], row['redelivered'], row['message_count']])).toEqual([['x', 'True', '1']]);
    expect(rows(await rabbitmqadmin(port, '-f', 'tsv', 'list', 'queues', 'name', 'messages'))).toEqual([{ name: 'q', messages: '1' }]);

    expect(await rabbitmqadmin(port, 'delete', 'queue', 'name=q')).toContain('queue deleted');
    expect(await rabbitmqadmin(port, 'list', 'queues')).toContain('No items');
    expect(cairn.broker.state.queues.has('q')).toBe(false);
  });

  it('declares an exchange and a binding, routes through them, unbinds with the properties key, purges', async () => {
    await rabbitmqadmin(port, 'declare', 'queue', 'name=orders');
    await rabbitmqadmin(port, 'declare', 'exchange', 'name=shop', 'type=topic');
    await rabbitmqadmin(port, 'declare', 'binding', 'source=shop', 'destination=orders', 'routing_key=order.#');
    const bindings = rows(await rabbitmqadmin(port, '-f', 'tsv', 'list', 'bindings'));
    expect(bindings).toContainEqual({ source: 'shop', destination: 'orders', routing_key: 'order.#' });
    expect(rows(await rabbitmqadmin(port, '-f', 'tsv', 'list', 'exchanges')).map((row) => [row['name'], row['type']])).toContainEqual(['shop', 'topic']);
    expect(await rabbitmqadmin(port, 'publish', 'exchange=shop', 'routing_key=order.created', 'payload={"id":1}')).toContain('Message published');
    expect(rows(await rabbitmqadmin(port, '-f', 'tsv', 'list', 'queues', 'name', 'messages'))).toEqual([{ name: 'orders', messages: '1' }]);
    await rabbitmqadmin(port, 'delete', 'binding', 'source=shop', 'destination_type=queue', 'destination=orders', 'properties_key=order.%23');
    expect(rows(await rabbitmqadmin(port, '-f', 'tsv', 'list', 'bindings')).filter((row) => row['source'] === 'shop')).toEqual([]);
    expect(await rabbitmqadmin(port, 'purge', 'queue', 'name=orders')).toContain('queue purged');
    expect(rows(await rabbitmqadmin(port, '-f', 'tsv', 'list', 'queues', 'name', 'messages'))).toEqual([{ name: 'orders', messages: '0' }]);
    await rabbitmqadmin(port, 'delete', 'exchange', 'name=shop');
    await rabbitmqadmin(port, 'delete', 'queue', 'name=orders');
  });

  it('shows the overview, vhosts and nodes, lists an AMQP client\'s connection, channel and consumer, and closes it', async () => {
    const overview = rows(await rabbitmqadmin(port, '-f', 'tsv', 'show', 'overview'));
    expect(overview).toEqual([expect.objectContaining({ 'object_totals.queues': '0', 'queue_totals.messages': '0' })]);
    expect(rows(await rabbitmqadmin(port, '-f', 'tsv', 'list', 'vhosts'))).toEqual([{ name: '/', messages: '0' }]);
    expect(rows(await rabbitmqadmin(port, '-f', 'tsv', 'list', 'nodes'))).toEqual([expect.objectContaining({ type: 'disc' })]);

    const connection = await amqp.connect(`amqp://127.0.0.1:${cairn.amqpPort!}`);
    const closed = new Promise<Error | undefined>((resolve) => connection.once('close', (error?: Error) => resolve(error)));
    const channel = await connection.createChannel();
    await channel.assertQueue('work');
    await channel.prefetch(3);
    await channel.consume('work', () => undefined, { consumerTag: 'worker-1' });
    const connections = rows(await rabbitmqadmin(port, '-f', 'tsv', 'list', 'connections'));
    expect(connections).toEqual([{ name: expect.stringMatching(/^127\.0\.0\.1:\d+ -> 127\.0\.0\.1:\d+$/), user: 'guest', channels: '1' }]);
    const name = connections[0]!['name']!;
    expect(rows(await rabbitmqadmin(port, '-f', 'tsv', 'list', 'channels'))).toEqual([{ name: `${name} (1)`, user: 'guest' }]);
    const consumers = rows(await rabbitmqadmin(port, '-f', 'tsv', 'list', 'consumers', 'consumer_tag', 'queue.name', 'prefetch_count', 'channel_details.connection_name'));
    expect(consumers).toEqual([{ consumer_tag: 'worker-1', 'queue.name': 'work', prefetch_count: '3', 'channel_details.connection_name': name }]);

    expect(await rabbitmqadmin(port, 'close', 'connection', `name=${name}`)).toContain('connection closed');
    const error = await closed;
    expect(error?.message).toMatch(/CONNECTION_FORCED - Closed via management plugin/);
    await until(() => cairn.broker.queues.get('work')?.consumers.length === 0, 'the consumer of the closed connection to be gone');
    expect(await rabbitmqadmin(port, 'list', 'connections')).toContain('No items');
  });

  it('reports RabbitMQ-style errors: 404 for a missing queue, 400 with the reason for an unsupported argument', async () => {
    await expect(rabbitmqadmin(port, 'delete', 'queue', 'name=nope')).rejects.toThrow(/Not found: \/api\/queues\/%2F\/nope/);
    await expect(rabbitmqadmin(port, 'declare', 'queue', 'name=z', 'arguments={"x-queue-mode":"lazy"}')).rejects.toThrow(/argument\(s\) 'x-queue-mode' not supported by Cairn/);
  });
});
