/**
 * Large answers (a queue list, the per-queue metrics: hundreds of KiB over
 * 1,000 queues) written straight into reused buffers. A new buffer of that
 * size costs more than filling it: freshly mapped memory faults in page by
 * page (microbench, 300 KB: Buffer.from of the text 0.7 ms, writing the same
 * text into a buffer that exists 0.02 ms), and building the text first costs
 * again. An AnswerBytes is taken from its pool, filled, and given back once
 * its bytes are gzipped or copied into the message to the listener's socket
 * thread (server.ts), which happens before the answer is sent.
 *
 * Invariant: a buffer is in the pool or in one answer, never both.
 */
import { assert } from '../assert.js';
import { writeUtf8 } from '../utf8-bytes.js';

/** A buffer this large or larger is not kept after its answer (a rare huge answer should not stay resident). */
const keptBytesMax = 8 * 1024 * 1024;
/** Answers in progress at once rarely exceed this; more buffers are made and dropped. */
const keptBuffersMax = 4;
const firstBytes = 64 * 1024;
/** Pieces up to this long are copied byte by byte (measured: faster than a call into Buffer's native copy). */
const shortBytesMax = 128;

export class AnswerBytes {
  private buffer: Buffer;
  private length = 0;

  constructor(buffer: Buffer) {
    this.buffer = buffer;
  }

  /** Text of ASCII characters only (keys, numbers, punctuation): one byte each. */
  ascii(text: string): this {
    this.reserve(text.length);
    if (text.length > shortBytesMax) {
      this.length += this.buffer.write(text, this.length, 'latin1');
      return this;
    }
    // Short pieces byte by byte: a call into Buffer.write costs more than the copy. Not through utf8-bytes'
    // writeAsciiPrefix, which checks each character: this text is ASCII, and a queue list written through it measured slower.
    const buffer = this.buffer;
    let at = this.length;
    for (let i = 0; i < text.length; i++) buffer[at++] = text.charCodeAt(i);
    this.length = at;
    return this;
  }

  /** Any text, as UTF-8. */
  utf8(text: string): this {
    this.reserve(text.length * 3);
    this.length += writeUtf8(this.buffer, this.length, text);
    return this;
  }

  bytes(bytes: Uint8Array): this {
    this.reserve(bytes.length);
    this.buffer.set(bytes, this.length);
    this.length += bytes.length;
    return this;
  }

  /** `bytes[start, end)`. */
  range(bytes: Buffer, start: number, end: number): this {
    this.reserve(end - start);
    if (end - start > shortBytesMax) {
      this.length += bytes.copy(this.buffer, this.length, start, end);
      return this;
    }
    const buffer = this.buffer;
    let at = this.length;
    for (let i = start; i < end; i++) buffer[at++] = bytes[i]!;
    this.length = at;
    return this;
  }

  /** A number as JSON.stringify writes it (null for NaN and the infinities). */
  number(value: number): this {
    if (!Number.isFinite(value)) return this.ascii('null');
    if (!Number.isSafeInteger(value) || value < 0) return this.ascii(`${value}`);
    this.reserve(16);
    if (value === 0) {
      this.buffer[this.length++] = 0x30;
      return this;
    }
    let digits = 0;
    for (let rest = value; rest > 0; rest = Math.floor(rest / 10)) digits++;
    let at = this.length + digits;
    this.length = at;
    for (let rest = value; rest > 0; rest = Math.floor(rest / 10)) this.buffer[--at] = 0x30 + (rest % 10);
    return this;
  }

  /** The bytes written so far (a view: valid until the writer is given back). */
  view(): Buffer {
    return this.buffer.subarray(0, this.length);
  }

  /** Empties the writer and returns its buffer (for the pool). */
  takeBuffer(): Buffer {
    this.length = 0;
    return this.buffer;
  }

  private reserve(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    let size = this.buffer.length * 2;
    while (size < this.length + bytes) size *= 2;
    const grown = Buffer.allocUnsafeSlow(size);
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }
}

/** The buffers answers are written into, reused from one answer to the next. */
export class AnswerBytesPool {
  private readonly free: Buffer[] = [];
  private readonly lent = new WeakSet<AnswerBytes>();

  take(): AnswerBytes {
    const writer = new AnswerBytes(this.free.pop() ?? Buffer.allocUnsafeSlow(firstBytes));
    this.lent.add(writer);
    return writer;
  }

  /** `writer`'s bytes have been read (copied or gzipped): its buffer may be written again. */
  giveBack(writer: AnswerBytes): void {
    assert(this.lent.has(writer), 'AnswerBytesPool.giveBack: a writer given back twice or not from this pool');
    this.lent.delete(writer);
    const buffer = writer.takeBuffer();
    if (buffer.length < keptBytesMax && this.free.length < keptBuffersMax) this.free.push(buffer);
  }
}
