/**
 * writeFrame lays a frame out as record.ts says, whichever way it computes the
 * checksum: composed in the WebAssembly scratch and stamped there (frames up
 * to frameScratchBytesMax), or hashed where it lies (bigger ones). Each frame
 * is compared byte for byte with one built here field by field, its checksum
 * from xxhash-wasm's own h64Raw.
 */
import xxhash from 'xxhash-wasm';
import { describe, expect, it } from 'vitest';
import { announceSeed, seededRandom, testSeed } from '../../test/support/kit.js';
import { frameScratchBytesMax } from './checksum.js';
import { frameChecksumMatches, frameHeaderBytes, writeFrame } from './record.js';

const library = await xxhash();

/** The frame, field by field (record.ts's table), with the library's checksum. */
function expectedFrame(lsn: number, timestamp: number, kind: number, body: Uint8Array): Buffer {
  const frame = Buffer.alloc(frameHeaderBytes + body.length);
  frame.writeUInt32LE(frame.length, 8);
  frame.writeUInt32LE(lsn % 2 ** 32, 12);
  frame.writeUInt32LE(Math.floor(lsn / 2 ** 32), 16);
  frame.writeDoubleLE(timestamp, 20);
  frame[28] = kind;
  frame.set(body, frameHeaderBytes);
  frame.writeBigUInt64LE(library.h64Raw(frame.subarray(8)), 0);
  return frame;
}

describe('writeFrame', () => {
  it('writes the frame of the format, checksum included, for bodies either side of the scratch bound, back to back at unaligned offsets', () => {
    announceSeed('record writeFrame');
    const random = seededRandom(testSeed);
    const bound = frameScratchBytesMax - frameHeaderBytes;
    const sizes = [1, 2, 100, 255, 4096, bound - 1, bound, bound + 1, 200_000, ...Array.from({ length: 40 }, () => 1 + Math.floor(random() * 2 * bound))];
    const frames = sizes.map((size, i) => {
      const body = Uint8Array.from({ length: size }, () => Math.floor(random() * 256));
      const lsn = i % 2 === 0 ? 1 + i : 2 ** 40 + i;
      return { lsn, timestamp: 1.7e12 + random(), kind: 1 + (i % 255), body, expected: undefined as Buffer | undefined };
    });
    for (const frame of frames) frame.expected = expectedFrame(frame.lsn, frame.timestamp, frame.kind, frame.body);
    // A target that starts 3 bytes into its ArrayBuffer: byteOffset must be honoured.
    const total = frames.reduce((sum, f) => sum + f.expected!.length, 0);
    const target = Buffer.alloc(total + 3).subarray(3);
    let offset = 0;
    const offsets: number[] = [];
    for (const f of frames) {
      offsets.push(offset);
      offset += writeFrame(target, offset, f.lsn, f.timestamp, f.kind, f.body);
    }
    expect(offset).toBe(total);
    // Checked after all are written: a later frame must not have changed an earlier one.
    frames.forEach((f, i) => {
      const written = target.subarray(offsets[i]!, offsets[i]! + f.expected!.length);
      if (!written.equals(f.expected!)) expect({ size: f.body.length, written: written.toString('hex', 0, 64) }).toEqual({ size: f.body.length, written: f.expected!.toString('hex', 0, 64) });
      expect(frameChecksumMatches(target, offsets[i]!, f.expected!.length)).toBe(true);
    });
  });
});
