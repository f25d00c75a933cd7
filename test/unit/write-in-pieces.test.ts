/**
 * Large answers handed to the socket a piece at a time
 * (src/http/write-in-pieces.ts): for random sizes, the pieces put together
 * are the answer, none is longer than the bound, end() comes once with the
 * last; a turn of the event loop passes between pieces (a callback queued
 * when the answer began runs before it ends); a full socket buffer
 * (write() false) holds the next piece until 'drain'; a destroyed response
 * gets no more writes.
 */
import { EventEmitter } from 'node:events';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { writeInPieces, writePieceBytesMax, type PieceSink } from '../../src/http/write-in-pieces.js';
import { announceSeed, testSeed, until } from '../support/kit.js';

class FakeSink extends EventEmitter implements PieceSink {
  destroyed = false;
  readonly pieces: Buffer[] = [];
  ends = 0;
  /** What write() answers: false says the socket's buffer is full. */
  accepting = true;

  write(piece: Buffer): boolean {
    this.pieces.push(Buffer.from(piece));
    return this.accepting;
  }

  end(piece: Buffer): void {
    this.pieces.push(Buffer.from(piece));
    this.ends++;
  }
}

describe('writeInPieces', () => {
  it('the pieces put together are the answer, each within the bound, end() once with the last', async () => {
    const seed = announceSeed('write in pieces', testSeed);
    await fc.assert(fc.asyncProperty(fc.nat(5000), fc.integer({ min: 1, max: 700 }), async (length, pieceBytesMax) => {
      const bytes = Buffer.from(Array.from({ length }, (_, i) => (i * 7) & 0xff));
      const sink = new FakeSink();
      writeInPieces(sink, bytes, pieceBytesMax);
      await until(() => sink.ends > 0, 'the last piece');
      expect(sink.ends).toBe(1);
      expect(Buffer.concat(sink.pieces).equals(bytes)).toBe(true);
      expect(sink.pieces.length).toBe(Math.max(1, Math.ceil(length / pieceBytesMax)));
      for (const piece of sink.pieces) expect(piece.length).toBeLessThanOrEqual(pieceBytesMax);
    }), { seed, numRuns: 100 });
  });

  it('a 300 KB answer takes several writes, with callbacks queued when it began run before it ends', async () => {
    const sink = new FakeSink();
    let endsWhenTurned = -1;
    writeInPieces(sink, Buffer.alloc(300_000));
    setImmediate(() => { endsWhenTurned = sink.ends; });
    await until(() => sink.ends > 0, 'the last piece');
    expect(sink.pieces.length).toBe(Math.ceil(300_000 / writePieceBytesMax));
    expect(endsWhenTurned).toBe(0);
  });

  it('a full socket buffer holds the next piece until drain', async () => {
    const sink = new FakeSink();
    sink.accepting = false;
    writeInPieces(sink, Buffer.alloc(10), 4);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sink.pieces.length).toBe(1);
    sink.emit('drain');
    expect(sink.pieces.length).toBe(2);
    sink.emit('drain');
    expect(sink.pieces.length).toBe(3);
    expect(sink.ends).toBe(1);
  });

  it('a destroyed response gets no more writes', async () => {
    const sink = new FakeSink();
    writeInPieces(sink, Buffer.alloc(10), 4);
    sink.destroyed = true;
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(sink.pieces.length).toBe(1);
    expect(sink.ends).toBe(0);
  });
});
