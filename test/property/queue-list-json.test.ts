/**
 * The queue lists written as text (src/http/management/queue-fields.ts) against
 * the object form they replace: for random queues (names with quotes,
 * backslashes, control characters, non-ASCII and lone surrogates; random
 * figures, arguments and consumer tags) and random `columns`, the text equals
 * JSON.stringify of what listAnswer makes of RabbitMQ's queue objects, byte for
 * byte — before and after the figures change (the fixed fields are kept per
 * queue, the figures never are).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { listAnswer, wholeListColumns } from '../../src/http/management/listing.js';
import { QueueListWriter, queueFields, type QueueView } from '../../src/http/management/queue-fields.js';
import { announceSeed, testSeed } from '../support/kit.js';

const node = 'cairn@host "1"';

/** RabbitMQ's queue object, as resources.ts built it before the text writer (the oracle). */
function expectedQueueObject(queue: QueueView): Record<string, unknown> {
  const unacked = queue.unacked.size;
  return {
    name: queue.name, vhost: '/', durable: queue.durable, auto_delete: queue.autoDelete, exclusive: queue.exclusiveOwner !== undefined,
    arguments: { ...queue.queueArguments }, node, state: 'running', type: queue.queueArguments?.['x-queue-type'] ?? 'classic', policy: null,
    messages: queue.readyCount + unacked, messages_ready: queue.readyCount, messages_unacknowledged: unacked,
    consumers: queue.consumers.length, exclusive_consumer_tag: queue.exclusiveConsumer?.tag ?? null,
    cairn: { dropped_messages: queue.dropped },
  };
}

const text = fc.string({ unit: fc.oneof(fc.constantFrom('"', '\\', '\n', '\u0000', '\u001f', '\u2028', 'é', '\ud800', '\udc00', '😀'), fc.string({ unit: 'binary', maxLength: 1 })), maxLength: 10 });
const figure = fc.oneof(fc.nat(10_000_000), fc.double());

type MutableQueue = { -readonly [K in keyof QueueView]: QueueView[K] };

const queueArbitrary = fc.record({
  name: text,
  durable: fc.boolean(),
  autoDelete: fc.boolean(),
  exclusiveOwner: fc.option(text, { nil: undefined }),
  queueArguments: fc.option(fc.record({ 'x-queue-type': fc.constantFrom('classic', 'quorum'), 'x-max-length': fc.nat(), 'x-dead-letter-exchange': text }, { requiredKeys: [] }), { nil: undefined }),
  readyCount: figure,
  dropped: figure,
  unacked: fc.record({ size: figure }),
  consumers: fc.record({ length: figure }),
  exclusiveConsumer: fc.option(fc.record({ tag: text }), { nil: undefined }),
}).map((queue) => queue as unknown as MutableQueue);

const fieldNames = queueFields(node).map((field) => field.key);
const columnsArbitrary = fc.option(fc.array(fc.constantFrom(...fieldNames, 'unknown', '', '__proto__', 'toString', 'constructor', 'cairn.dropped_messages'), { maxLength: 8 }), { nil: undefined });

function urlWith(columns: readonly string[] | undefined): URL {
  const url = new URL('http://cairn.invalid/api/queues');
  if (columns !== undefined) url.searchParams.set('columns', columns.join(','));
  return url;
}

describe('queue lists written as text', () => {
  it('equal JSON.stringify of the object form for any queues and columns, before and after their figures change', () => {
    const seed = announceSeed('queue list text', testSeed);
    const writer = new QueueListWriter(queueFields(node));
    fc.assert(fc.property(fc.array(queueArbitrary, { maxLength: 6 }), columnsArbitrary, fc.array(fc.tuple(figure, figure)), (queues, columns, changes) => {
      const url = urlWith(columns);
      const whole = wholeListColumns(url);
      const dotted = columns?.some((column) => column.includes('.')) ?? false;
      expect(whole === undefined).toBe(dotted);
      if (whole === undefined) return;
      const indexes = writer.columnIndexes(whole.columns);
      const expected = (): string => JSON.stringify(listAnswer(queues.map(expectedQueueObject), url).body);
      expect(writer.listText(queues, indexes)).toBe(expected());
      changes.forEach(([ready, dropped], i) => {
        const queue = queues[i % Math.max(1, queues.length)];
        if (queue === undefined) return;
        queue.readyCount = ready;
        queue.dropped = dropped;
      });
      expect(writer.listText(queues, indexes)).toBe(expected());
    }), { seed, numRuns: 500 });
  });

  it('a list with a filter, sort or page is not written as text (listAnswer answers it)', () => {
    for (const query of ['name=a', 'sort=name', 'page=1', 'use_regex=true', 'sort_reverse=true', 'page_size=10', 'columns=cairn.dropped_messages']) {
      expect(wholeListColumns(new URL(`http://cairn.invalid/api/queues?${query}`)), query).toBeUndefined();
    }
    expect(wholeListColumns(new URL('http://cairn.invalid/api/queues?columns=name,messages&disable_stats=true&pagination=false'))).toEqual({ columns: ['name', 'messages'] });
  });
});
