/**
 * xxhash64 (xxhash-wasm) for frames, segment headers and snapshots.
 *
 * The WebAssembly module is instantiated once, at module load (top-level
 * await), rather than in SegmentedLog.open: the offline reader
 * (`openLogReader`) has a synchronous API and needs checksums too, and every
 * importer of the log pays the ~1 ms instantiation exactly once either way.
 *
 * Verifying a frame on read is the hot path of replay, and the library's
 * h64Raw returns a BigInt (masked: a second BigInt) to be compared with a
 * third read from the frame: ~250 ns a record, a quarter of the replay
 * budget. So `prefixedChecksumMatches` instantiates the library's own wasm
 * file a second time, next to a 90-byte helper module (below) that calls its
 * xxh64 and compares the result with the stored checksum inside WebAssembly:
 * integers only cross the boundary (~90 ns with the copy in). If the file is
 * not where this version of the package ships it, the library path is used.
 *
 * Encoding a frame has the mirror problem: h64Raw's BigInt, masked, then
 * split again into the frame, and a view to hash, for every record appended.
 * So the append path composes each frame in the WebAssembly memory of its own
 * instance (`frameScratch`), where the helper's `stamp` stores the checksum in
 * place (`stampScratch`), and copies the finished frame into its batch: no
 * BigInt, no view but the one copied out. Its own instance, so that appends
 * never evict the window a reader keeps resident in the other one.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import xxhash from 'xxhash-wasm';
import { assert } from '../assert.js';

const api = await xxhash();

/** xxhash64, seed 0, of the bytes of `input` (any view: byteOffset is honoured). */
export function checksum64(input: Uint8Array): bigint {
  return api.h64Raw(input);
}

/**
 * Large inputs are fed to the hasher a slice at a time: V8 runs a WebAssembly function's first calls in its
 * baseline tier and switches to optimized code only between calls, so one call over a whole 25 MB snapshot
 * ran at baseline speed (~230 ms where the optimized code takes ~5 ms).
 */
const updateSliceBytes = 256 * 1024;

/** xxhash64 of the concatenation of `parts`, without copying them together. */
export function checksum64Parts(parts: readonly Uint8Array[]): bigint {
  const hasher = api.create64();
  for (const part of parts) {
    for (let at = 0; at < part.byteLength; at += updateSliceBytes) hasher.update(at === 0 && part.byteLength <= updateSliceBytes ? part : part.subarray(at, at + updateSliceBytes));
  }
  return hasher.digest();
}

/**
 * The helper module, hand-assembled (WebAssembly binary format 1):
 *
 *   (module
 *     (import "env" "xxh64" (func $xxh64 (param i32 i32 i64) (result i64)))
 *     (import "env" "mem" (memory 0))
 *     (func (export "matches") (param $at i32) (param $length i32) (result i32)
 *       (i64.eq
 *         (call $xxh64 (i32.add (local.get $at) (i32.const 8)) (i32.sub (local.get $length) (i32.const 8)) (i64.const 0))
 *         (i64.load (local.get $at))))
 *     (func (export "stamp") (param $at i32) (param $length i32)
 *       (i64.store (local.get $at)
 *         (call $xxh64 (i32.add (local.get $at) (i32.const 8)) (i32.sub (local.get $length) (i32.const 8)) (i64.const 0)))))
 */
const helperModule = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  // type section: 0 = (i32 i32 i64) -> i64, 1 = (i32 i32) -> i32, 2 = (i32 i32) -> ()
  0x01, 0x13, 0x03, 0x60, 0x03, 0x7f, 0x7f, 0x7e, 0x01, 0x7e, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f, 0x60, 0x02, 0x7f, 0x7f, 0x00,
  // import section: env.xxh64 (type 0), env.mem (memory, min 0 pages)
  0x02, 0x18, 0x02, 0x03, 0x65, 0x6e, 0x76, 0x05, 0x78, 0x78, 0x68, 0x36, 0x34, 0x00, 0x00,
  0x03, 0x65, 0x6e, 0x76, 0x03, 0x6d, 0x65, 0x6d, 0x02, 0x00, 0x00,
  // function section: two functions, of types 1 and 2
  0x03, 0x03, 0x02, 0x01, 0x02,
  // export section: "matches" = function 1, "stamp" = function 2
  0x07, 0x13, 0x02, 0x07, 0x6d, 0x61, 0x74, 0x63, 0x68, 0x65, 0x73, 0x00, 0x01, 0x05, 0x73, 0x74, 0x61, 0x6d, 0x70, 0x00, 0x02,
  // code section: the two bodies above
  0x0a, 0x2e, 0x02,
  0x16, 0x00,
  0x20, 0x00, 0x41, 0x08, 0x6a, 0x20, 0x01, 0x41, 0x08, 0x6b, 0x42, 0x00, 0x10, 0x00,
  0x20, 0x00, 0x29, 0x03, 0x00, 0x51, 0x0b,
  0x15, 0x00,
  0x20, 0x00,
  0x20, 0x00, 0x41, 0x08, 0x6a, 0x20, 0x01, 0x41, 0x08, 0x6b, 0x42, 0x00, 0x10, 0x00,
  0x37, 0x03, 0x00, 0x0b,
]);

// The compile target's libs do not declare WebAssembly; these are the few members used here.
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmInstance {
  readonly exports: Record<string, unknown>;
}
interface WasmApi {
  readonly Memory: abstract new (...args: never[]) => WasmMemory;
  instantiate(bytes: Uint8Array, imports?: Record<string, Record<string, unknown>>): Promise<{ instance: WasmInstance }>;
}
const wasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

interface Direct {
  readonly memory: WasmMemory;
  readonly matches: (at: number, length: number) => number;
  readonly stamp: (at: number, length: number) => void;
}

const wasmPageBytes = 64 * 1024;
const direct = await instantiateDirect();
let directBytes = direct === undefined ? new Uint8Array(0) : new Uint8Array(direct.memory.buffer);

/** Memory in which the append path composes a frame for stampScratch; `bytes` and `view` cover the same bytes. */
export interface FrameScratch {
  readonly bytes: Uint8Array;
  readonly view: DataView;
}

/**
 * The largest frame composed in the scratch: its memory never grows past this (nor is it ever replaced, so
 * its views stay valid). A bigger frame is hashed where it lies, its copy costing more than the BigInt.
 */
export const frameScratchBytesMax = 64 * 1024;
const stamper = direct === undefined ? undefined : await instantiateDirect();
const scratch = stamper === undefined ? undefined : scratchOf(stamper.memory);

function scratchOf(memory: WasmMemory): FrameScratch {
  const bytes = memory.buffer.byteLength;
  if (bytes < frameScratchBytesMax) memory.grow(Math.ceil((frameScratchBytesMax - bytes) / wasmPageBytes));
  return { bytes: new Uint8Array(memory.buffer), view: new DataView(memory.buffer) };
}

/** The scratch to compose a frame of `length` bytes in, at offset 0; undefined when it is too big (or WebAssembly is not direct). */
export function frameScratch(length: number): FrameScratch | undefined {
  return length <= frameScratchBytesMax ? scratch : undefined;
}

/** Stores in the scratch's bytes [0, 8), little-endian, the xxhash64 of its bytes [8, length); `length` as given to frameScratch. */
export function stampScratch(length: number): void {
  stamper!.stamp(0, length);
}

async function instantiateDirect(): Promise<Direct | undefined> {
  let wasm: Buffer;
  try {
    // The package's export map hides the file; find it from its CommonJS entry (cjs/xxhash-wasm.cjs).
    wasm = readFileSync(join(dirname(createRequire(import.meta.url).resolve('xxhash-wasm')), '..', 'workerd', 'xxhash.wasm'));
  } catch {
    return undefined;
  }
  const { instance } = await wasmApi.instantiate(wasm);
  const { mem, xxh64 } = instance.exports;
  if (!(mem instanceof wasmApi.Memory) || typeof xxh64 !== 'function') return undefined;
  const helper = await wasmApi.instantiate(helperModule, { env: { xxh64, mem } });
  const { matches, stamp } = helper.instance.exports;
  return { memory: mem, matches: matches as Direct['matches'], stamp: stamp as Direct['stamp'] };
}

/**
 * True when the 8 bytes at `offset` hold, little-endian, the xxhash64 of the
 * bytes [offset + 8, offset + length) of `source`. `length` >= 8 and in bounds.
 */
export function prefixedChecksumMatches(source: Buffer, offset: number, length: number): boolean {
  if (direct === undefined) {
    return source.readBigUInt64LE(offset) === api.h64Raw(new Uint8Array(source.buffer, source.byteOffset + offset + 8, length - 8));
  }
  if (length > directBytes.length) {
    direct.memory.grow(Math.ceil((length - directBytes.length) / wasmPageBytes));
    directBytes = new Uint8Array(direct.memory.buffer);
  }
  source.copy(directBytes, 0, offset, offset + length);
  residentOwner = 0;
  return direct.matches(0, length) === 1;
}

/**
 * Which chunk's bytes sit in WebAssembly memory: a cursor's chunk is copied in
 * a window at a time (one memcpy per window instead of one copy per frame),
 * and stays valid until the cursor refills its chunk (`fill` changes) or
 * another chunk is verified. When two readers alternate, each copies only its
 * frame, so interleaving costs no more than the per-frame path.
 */
const windowBytes = 256 * 1024;
/** The owning cursor's id (a number, not the cursor: holding it would keep its chunk alive). */
let residentOwner = 0;
let residentFill = -1;
/** Index in the owner's chunk of WebAssembly byte 0, and the end of what was copied. */
let residentStart = 0;
let residentEnd = 0;

let chunkOwners = 0;
/** A fresh id for a reader's chunk, for chunkChecksumMatches. */
export function nextChunkOwner(): number {
  chunkOwners += 1;
  return chunkOwners;
}

/**
 * prefixedChecksumMatches for a range of a reused read chunk: `owner` and
 * `fill` identify the chunk's current contents (the owner bumps `fill` each
 * time it changes them; ids start at 1, see nextChunkOwner); `chunkBytes` is
 * how much of it holds file data.
 */
export function chunkChecksumMatches(owner: number, fill: number, chunk: Uint8Array, chunkBytes: number, offset: number, length: number): boolean {
  if (direct === undefined) return prefixedChecksumMatches(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length), offset, length);
  if (owner !== residentOwner || fill !== residentFill || offset < residentStart || offset + length > residentEnd) {
    const end = owner === residentOwner ? Math.min(chunkBytes, offset + Math.max(length, windowBytes)) : offset + length;
    if (end - offset > directBytes.length) {
      direct.memory.grow(Math.ceil((end - offset - directBytes.length) / wasmPageBytes));
      directBytes = new Uint8Array(direct.memory.buffer);
    }
    directBytes.set(chunk.subarray(offset, end));
    residentOwner = owner;
    residentFill = fill;
    residentStart = offset;
    residentEnd = end;
  }
  return direct.matches(offset - residentStart, length) === 1;
}

// The direct path must agree with the library, or every read would fail (or worse, pass): checked once here.
{
  const probe = Buffer.alloc(300);
  for (let i = 8; i < probe.length; i++) probe[i] = (i * 151) & 0xff;
  probe.writeBigUInt64LE(api.h64Raw(probe.subarray(8)), 0);
  assert(prefixedChecksumMatches(probe, 0, probe.length), 'xxhash direct path disagrees with xxhash-wasm: update checksum.ts');
  probe[100] = probe[100]! ^ 1;
  assert(!prefixedChecksumMatches(probe, 0, probe.length), 'xxhash direct path accepts a damaged range: update checksum.ts');
  probe[100] = probe[100]! ^ 1;
  const composed = frameScratch(probe.length);
  if (composed !== undefined) {
    composed.bytes.set(probe.subarray(8), 8);
    stampScratch(probe.length);
    assert(composed.view.getBigUint64(0, true) === probe.readBigUInt64LE(0), 'xxhash stamp disagrees with xxhash-wasm: update checksum.ts');
  }
}
