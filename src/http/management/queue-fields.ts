/**
 * A queue in RabbitMQ's JSON shape (GET /api/queues), field by field, and the
 * same list written straight as JSON text for the answers a monitoring load
 * asks for every few seconds (the whole list, or a few columns of it).
 *
 * Building 1,000 objects and handing them to JSON.stringify cost the event loop
 * several milliseconds per answer (bench: `node dist/tools/bench.js
 * scrape-cost`); the text here is written from the same field table, with the
 * fields that never change for a queue (its name, flags and arguments: all
 * fixed when it is declared) encoded once per queue and kept. Invariant: the
 * text equals JSON.stringify of the object form, byte for byte (a property
 * test checks it over random names and figures). A list is written in slices
 * (answer-slices.ts) from the queues' changing fields copied before the first
 * slice, so it shows one moment like the object form. Each queue's whole
 * object text is kept per set of columns with the values it was written
 * from: a queue that has not changed since the last list costs a copy, and
 * a list none of whose queues changed (nor the queues themselves) is the
 * last list's text, one copy.
 */
import type { QueueRuntime } from '../../core/amqp-queue.js';
import { AnswerBytes } from '../answer-bytes.js';
import { itemsPerCheck, renderAtOnce } from '../answer-slices.js';

/** What a queue's JSON is read from (a QueueRuntime; tests pass plain objects). */
export type QueueView = Pick<QueueRuntime, 'name' | 'durable' | 'autoDelete' | 'exclusiveOwner' | 'queueArguments' | 'readyCount' | 'dropped'> & {
  readonly unacked: { readonly size: number };
  readonly consumers: { readonly length: number };
  readonly exclusiveConsumer: { readonly tag: string } | undefined;
};

interface QueueField {
  readonly key: string;
  /** The field's value, as the object form holds it (never undefined: the text would not leave the key out). */
  value(queue: QueueView): unknown;
  /** fixed: the same for the queue's life (encoded once and kept); figure: a number; else encoded each time. */
  readonly kind: 'fixed' | 'figure' | 'changing';
  /** A faster encoding of a changing value than JSON.stringify (it must write the same text). */
  write?(queue: QueueView, out: AnswerBytes): void;
}

/** The fields in RabbitMQ's order; `node` is this node's name. */
export function queueFields(node: string): readonly QueueField[] {
  const fixed = (key: string, value: (queue: QueueView) => unknown): QueueField => ({ key, value, kind: 'fixed' });
  const figure = (key: string, value: (queue: QueueView) => number): QueueField => ({ key, value, kind: 'figure' });
  return [
    fixed('name', (q) => q.name),
    fixed('vhost', () => '/'),
    fixed('durable', (q) => q.durable),
    fixed('auto_delete', (q) => q.autoDelete),
    fixed('exclusive', (q) => q.exclusiveOwner !== undefined),
    fixed('arguments', (q) => ({ ...q.queueArguments })),
    fixed('node', () => node),
    fixed('state', () => 'running'),
    fixed('type', (q) => q.queueArguments?.['x-queue-type'] ?? 'classic'),
    fixed('policy', () => null),
    figure('messages', (q) => q.readyCount + q.unacked.size),
    figure('messages_ready', (q) => q.readyCount),
    figure('messages_unacknowledged', (q) => q.unacked.size),
    figure('consumers', (q) => q.consumers.length),
    {
      key: 'exclusive_consumer_tag', value: (q) => q.exclusiveConsumer?.tag ?? null, kind: 'changing',
      write: (q, out) => { if (q.exclusiveConsumer === undefined) out.ascii('null'); else out.utf8(JSON.stringify(q.exclusiveConsumer.tag)); },
    },
    {
      key: 'cairn', value: (q) => ({ dropped_messages: q.dropped }), kind: 'changing',
      write: (q, out) => { out.ascii('{"dropped_messages":').number(q.dropped).ascii('}'); },
    },
  ];
}

/**
 * What of a queue may change, read at one moment: every field that is not 'fixed' is computed from these (ready,
 * unacknowledged, consumers, dropped, the exclusive consumer's tag), so a queue whose values equal those its kept
 * text was written from has that text.
 */
interface ChangingValues {
  readonly ready: number;
  readonly unacknowledged: number;
  readonly consumers: number;
  readonly dropped: number;
  readonly tag: string | undefined;
}

function changingValuesOf(queue: QueueView): ChangingValues {
  return { ready: queue.readyCount, unacknowledged: queue.unacked.size, consumers: queue.consumers.length, dropped: queue.dropped, tag: queue.exclusiveConsumer?.tag };
}

/** Object.is, so that NaN equals NaN (both are written null) and -0 is told from 0. */
function sameValues(a: ChangingValues, b: ChangingValues): boolean {
  return Object.is(a.ready, b.ready) && Object.is(a.unacknowledged, b.unacknowledged) && Object.is(a.consumers, b.consumers)
    && Object.is(a.dropped, b.dropped) && a.tag === b.tag;
}

/**
 * Whether `queues` are the kept list's queues (the same objects, in order) with its values now: read in place, as
 * changingValuesOf would read them, without a copy per queue (a monitoring load lists idle queues every second).
 */
function sameList(list: NonNullable<KeptTexts['list']>, queues: readonly QueueView[]): boolean {
  if (list.queues.length !== queues.length) return false;
  for (let i = 0; i < queues.length; i++) {
    const queue = queues[i]!;
    const kept = list.values[i]!;
    if (list.queues[i] !== queue || !Object.is(kept.ready, queue.readyCount) || !Object.is(kept.unacknowledged, queue.unacked.size)
      || !Object.is(kept.consumers, queue.consumers.length) || !Object.is(kept.dropped, queue.dropped) || kept.tag !== queue.exclusiveConsumer?.tag) return false;
  }
  return true;
}

/** `queue` as it was when `values` were read (its fixed fields are shared: they never change). */
function viewAt(queue: QueueView, values: ChangingValues): QueueView {
  const { name, durable, autoDelete, exclusiveOwner, queueArguments } = queue;
  return {
    name, durable, autoDelete, exclusiveOwner, queueArguments, readyCount: values.ready, dropped: values.dropped,
    unacked: { size: values.unacknowledged },
    consumers: { length: values.consumers },
    exclusiveConsumer: values.tag === undefined ? undefined : { tag: values.tag },
  };
}

/** The object form: one queue as RabbitMQ's API shows it. */
export function queueObject(fields: readonly QueueField[], queue: QueueView): Readonly<Record<string, unknown>> {
  const object: Record<string, unknown> = {};
  for (const field of fields) object[field.key] = field.value(queue);
  return object;
}

/** A queue's object text for one set of columns, and the values it was written from. */
interface ObjectText {
  readonly values: ChangingValues;
  readonly bytes: Buffer;
}

/** Sets of columns whose object texts are kept (a client asking for ever new columns must not grow memory). */
const keptColumnSetsMax = 4;

/** What is kept per set of columns: each queue's last object text, and the last whole list with what it was written from. */
interface KeptTexts {
  readonly objects: WeakMap<QueueView, ObjectText>;
  list: { readonly queues: readonly QueueView[]; readonly values: readonly ChangingValues[]; readonly bytes: Buffer } | undefined;
}

/** A queue's fixed fields encoded: `"name":…,"vhost":…` in table order, and where each field's text starts and ends. */
interface FixedText {
  readonly bytes: Buffer;
  /** [start, end) of field i at 2i, 2i + 1; -1 for a field that is not fixed. */
  readonly ranges: Int32Array;
}

/**
 * Writes lists of queues as JSON text: the whole objects, or only some top-level
 * fields (RabbitMQ's `columns`), in the order asked for and each once.
 */
export class QueueListWriter {
  private readonly fixedTexts = new WeakMap<QueueView, FixedText>();
  /** Per set of columns (their indexes, joined), each queue's last object text (an unchanged queue's is copied) and the last list. */
  private readonly objectTexts = new Map<string, KeptTexts>();
  private readonly keyTexts: readonly string[];
  /** The same as bytes (a flat copy is faster to write than a string, which may be a rope). */
  private readonly keyBytes: readonly Buffer[];

  constructor(private readonly fields: readonly QueueField[]) {
    this.keyTexts = fields.map((field) => `${JSON.stringify(field.key)}:`);
    this.keyBytes = this.keyTexts.map((text) => Buffer.from(text));
  }

  /** The indexes of the fields `columns` names, in its order, each once; unknown names are left out (they have no value). */
  columnIndexes(columns: readonly string[] | undefined): number[] {
    if (columns === undefined) return this.fields.map((_, index) => index);
    const indexes: number[] = [];
    for (const column of columns) {
      const index = this.fields.findIndex((field) => field.key === column);
      if (index >= 0 && !indexes.includes(index)) indexes.push(index);
    }
    return indexes;
  }

  /** `[{...},{...}]` for `queues`, in their order, with the fields at `indexes`, into `out`, in one go. */
  write(queues: readonly QueueView[], indexes: readonly number[], out: AnswerBytes): void {
    renderAtOnce(this.writeSlices(queues, indexes, out));
  }

  /**
   * The same, yielding after every itemsPerCheck queues; what changes of the queues is read at the first step. The
   * same queues in the same order with the same values as the last list for these columns get that list again (one
   * copy: a monitoring load asks for lists of idle queues every second); otherwise a queue whose changing values are
   * those its last text for these columns was written from gets that text again (a copy), the others are written and
   * their text kept.
   */
  *writeSlices(queues: readonly QueueView[], indexes: readonly number[], out: AnswerBytes): Generator<void, void, undefined> {
    const kept = this.keptTextsFor(indexes);
    if (kept.list !== undefined && sameList(kept.list, queues)) {
      out.bytes(kept.list.bytes);
      return;
    }
    const now = queues.map(changingValuesOf);
    const start = out.view().length;
    out.ascii('[');
    for (let i = 0; i < queues.length; i++) {
      if (i > 0) out.ascii(',');
      const queue = queues[i]!;
      const values = now[i]!;
      const text = kept.objects.get(queue);
      if (text !== undefined && sameValues(text.values, values)) {
        out.bytes(text.bytes);
      } else {
        const objectStart = out.view().length;
        this.writeObject(queue, viewAt(queue, values), indexes, out);
        kept.objects.set(queue, { values, bytes: Buffer.from(out.view().subarray(objectStart)) });
      }
      if ((i + 1) % itemsPerCheck === 0) yield;
    }
    out.ascii(']');
    kept.list = { queues: [...queues], values: now, bytes: Buffer.from(out.view().subarray(start)) };
  }

  private keptTextsFor(indexes: readonly number[]): KeptTexts {
    const key = indexes.join(',');
    let texts = this.objectTexts.get(key);
    if (texts === undefined) {
      // The oldest set goes first (a Map iterates in insertion order).
      if (this.objectTexts.size >= keptColumnSetsMax) this.objectTexts.delete(this.objectTexts.keys().next().value!);
      texts = { objects: new WeakMap(), list: undefined };
      this.objectTexts.set(key, texts);
    }
    return texts;
  }

  /** The same as a string (tests). */
  listText(queues: readonly QueueView[], indexes: readonly number[]): string {
    const out = new AnswerBytes(Buffer.alloc(16));
    this.write(queues, indexes, out);
    return out.view().toString('utf8');
  }

  /** `queue`'s object: its fixed fields from the text kept for it, the others from `now`. */
  private writeObject(queue: QueueView, now: QueueView, indexes: readonly number[], out: AnswerBytes): void {
    const fixed = this.fixedTextOf(queue);
    out.ascii('{');
    // Neighbouring fixed fields are one copy: their text lies side by side, comma included.
    let copyStart = -1;
    let copyEnd = -1;
    let previous = -2;
    for (let i = 0; i < indexes.length; i++) {
      const index = indexes[i]!;
      const start = fixed.ranges[2 * index]!;
      if (start >= 0 && copyStart >= 0 && index === previous + 1) {
        copyEnd = fixed.ranges[2 * index + 1]!;
      } else {
        if (copyStart >= 0) out.range(fixed.bytes, copyStart, copyEnd);
        copyStart = -1;
        if (i > 0) out.ascii(',');
        if (start >= 0) {
          copyStart = start;
          copyEnd = fixed.ranges[2 * index + 1]!;
        } else {
          this.writeChanging(this.fields[index]!, index, now, out);
        }
      }
      previous = index;
    }
    if (copyStart >= 0) out.range(fixed.bytes, copyStart, copyEnd);
    out.ascii('}');
  }

  private writeChanging(field: QueueField, index: number, queue: QueueView, out: AnswerBytes): void {
    const key = this.keyBytes[index]!;
    out.range(key, 0, key.length);
    if (field.kind === 'figure') out.number(field.value(queue) as number);
    else if (field.write !== undefined) field.write(queue, out);
    else out.utf8(JSON.stringify(field.value(queue)));
  }

  private fixedTextOf(queue: QueueView): FixedText {
    let fixed = this.fixedTexts.get(queue);
    if (fixed === undefined) {
      const ranges = new Int32Array(2 * this.fields.length).fill(-1);
      let text = '';
      let bytes = 0;
      this.fields.forEach((field, index) => {
        if (field.kind !== 'fixed') return;
        if (text !== '') {
          text += ',';
          bytes++;
        }
        const fieldText = `${this.keyTexts[index]!}${JSON.stringify(field.value(queue))}`;
        ranges[2 * index] = bytes;
        bytes += Buffer.byteLength(fieldText);
        ranges[2 * index + 1] = bytes;
        text += fieldText;
      });
      fixed = { bytes: Buffer.from(text), ranges };
      this.fixedTexts.set(queue, fixed);
    }
    return fixed;
  }
}
