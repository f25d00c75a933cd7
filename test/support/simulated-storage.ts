/**
 * A simulated disk for the log (TigerBeetle's way): an in-memory file system
 * behind the log's seam (src/log/file-system.ts) that keeps what is durable
 * apart from what is only written, and can cut the power.
 *
 * What is durable follows POSIX, and nothing more:
 * - a file's bytes and size become durable only at an fdatasync/fsync of
 *   that file, and only the changes completed before the sync was issued;
 * - a directory entry (created, renamed, removed) becomes durable only at an
 *   fsync of the directory, again only for changes completed before it.
 * Asynchronous calls complete in a seeded random order (calls in flight
 * together may finish in any order, as on libuv's thread pool), and a call's
 * effect happens when it completes, not when it is issued.
 *
 * Power loss: after the call numbered `crashAfterCalls` (counting every call,
 * synchronous or not), the next call finds the power off: it and every call
 * in flight fail with EIO and have no effect. `powerLoss()` then gives the
 * disk as a reboot would find it: the durable state plus a seeded random part
 * of what was not synced yet —
 *   writes    'in-order': the unsynced writes of a file land up to a random
 *             point, the one at that point possibly torn (cut at a byte or
 *             sector boundary, or landing as zeros), later ones lost;
 *             'reordered': each unsynced write independently lands, is lost
 *             or is torn (page write-back in any order);
 *   entries   'in-order': a random prefix of each directory's unsynced
 *             changes; 'any-subset': each change independently (a rename or
 *             removal whose source is not there is skipped).
 *   'all-lost' (either): nothing unsynced survives — the harshest outcome,
 *             for tests that need one particular loss.)
 * Faults: the n-th fdatasync/fsync or write can fail (EIO, ENOSPC) instead.
 *
 * Everything is decided by the seeds, and nothing here reads a clock, so one
 * seed replays one run exactly, as long as the code driving it does not race
 * real timers.
 */
import { basename, dirname } from 'node:path';
import type { FileSize, LogFileSystem, OpenFlags, SyncCallback, WriteCallback } from '../../src/log/file-system.js';
import { seededRandom } from './kit.js';

export interface PowerLossModel {
  readonly writes: 'in-order' | 'reordered' | 'all-lost';
  readonly entries: 'in-order' | 'any-subset' | 'all-lost';
}

export interface InjectedFault {
  readonly call: 'write' | 'sync';
  /** The n-th call of that kind (1-based) fails. */
  readonly nth: number;
  readonly code: 'EIO' | 'ENOSPC';
}

export interface SimulatedStorageOptions {
  /** Drives the completion order and the post-crash choices. */
  readonly seed: number;
  readonly model?: PowerLossModel;
  /** The power goes off when call number crashAfterCalls + 1 is made. Default: never. */
  readonly crashAfterCalls?: number;
  readonly faults?: readonly InjectedFault[];
}

const sectorBytes = 512;

interface FileWrite {
  readonly kind: 'write';
  readonly seq: number;
  readonly position: number;
  readonly bytes: Buffer;
}
interface FileTruncate {
  readonly kind: 'truncate';
  readonly seq: number;
  readonly size: number;
}
type FileChange = FileWrite | FileTruncate;

class SimFile {
  readonly kind = 'file';
  /** What reads see. */
  live: Buffer;
  /** What survives a power loss for sure. */
  durable: Buffer;
  /** Changes applied to `live` but not yet to `durable`, in completion order. */
  pending: FileChange[] = [];

  constructor(contents: Buffer) {
    this.live = contents;
    this.durable = contents;
  }
}

type EntryChange =
  | { readonly kind: 'link'; readonly seq: number; readonly name: string; readonly node: SimNode }
  | { readonly kind: 'unlink'; readonly seq: number; readonly name: string; readonly node: SimNode }
  | { readonly kind: 'rename'; readonly seq: number; readonly from: string; readonly to: string; readonly node: SimNode };

class SimDirectory {
  readonly kind = 'directory';
  live = new Map<string, SimNode>();
  durable = new Map<string, SimNode>();
  pending: EntryChange[] = [];
}

type SimNode = SimFile | SimDirectory;

interface OpenFile {
  readonly node: SimNode;
  readonly path: string;
  readonly writable: boolean;
}

interface InFlight {
  readonly name: string;
  /** Runs at completion: the call's effect; throws an errno error to fail it. */
  readonly effect: () => unknown;
  readonly done: (error: NodeJS.ErrnoException | null, value: unknown) => void;
}

export function errnoError(code: string, syscall: string, path?: string): NodeJS.ErrnoException {
  const where = path === undefined ? '' : ` '${path}'`;
  return Object.assign(new Error(`${code}: ${syscall}${where} (simulated)`), { code, syscall, ...(path === undefined ? {} : { path }) });
}

/** The failure of a call made with the power off. */
function powerLostError(syscall: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`EIO: ${syscall}: the power is off (simulated)`), { code: 'EIO', syscall, simulated: 'power lost' });
}

/** True for the error of an injected fault or of a call made with the power off: what a run may die of. */
export function isSimulatedFailure(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'simulated' in error;
}

/** Follows `cause` links: the log wraps the file system's error in its own. */
export function causedBySimulatedFailure(error: unknown): boolean {
  for (let e: unknown = error; typeof e === 'object' && e !== null; e = (e as { cause?: unknown }).cause) if (isSimulatedFailure(e)) return true;
  return false;
}

export class SimulatedStorage implements LogFileSystem {
  /** Calls made so far (each counts once, when it is issued). */
  calls = 0;
  /** The name of each call made, in order: two runs of one seed must make the same ones. */
  readonly trace: string[] = [];
  private root: SimDirectory;
  private poweredOff = false;
  private crashAfterCalls: number | undefined;
  private model: PowerLossModel;
  private readonly completionOrder: () => number;
  private readonly crashChoices: () => number;
  private readonly faults: readonly InjectedFault[];
  private readonly faultCounts = { write: 0, sync: 0 };
  private readonly fds = new Map<number, OpenFile>();
  private nextFd = 3;
  private seq = 0;
  private readonly inFlight: InFlight[] = [];
  private completionScheduled = false;

  constructor(options: SimulatedStorageOptions, root?: SimDirectory) {
    this.model = options.model ?? { writes: 'in-order', entries: 'in-order' };
    this.crashAfterCalls = options.crashAfterCalls;
    this.faults = options.faults ?? [];
    this.completionOrder = seededRandom(options.seed);
    this.crashChoices = seededRandom(options.seed ^ 0x5eed5);
    this.root = root ?? new SimDirectory();
  }

  /** Where the power goes off: after this many calls (undefined: never). */
  get crashPoint(): number | undefined {
    return this.crashAfterCalls;
  }

  /** True once the power went off (a crash point was reached or powerLoss() was called). */
  get isPoweredOff(): boolean {
    return this.poweredOff;
  }

  /** Cuts the power when `calls` more calls have been made (0: from the next call on). */
  crashAfter(calls: number): void {
    this.crashAfterCalls = this.calls + calls;
  }

  /**
   * The disk as a reboot finds it: durable state plus a seeded choice of the
   * unsynced changes. This storage is powered off for good; the returned one
   * has everything durable, nothing pending, and no open file.
   */
  powerLoss(options: SimulatedStorageOptions): SimulatedStorage {
    this.powerOff();
    this.model = options.model ?? this.model;
    const copies = new Map<SimNode, SimNode>();
    const root = this.survivingDirectory(this.root, copies);
    return new SimulatedStorage({ model: this.model, ...options }, root);
  }

  /** A disk holding what this one holds now (what reads see), all of it durable, with its own options. */
  clone(options: SimulatedStorageOptions): SimulatedStorage {
    const copies = new Map<SimNode, SimNode>();
    const copy = (node: SimNode): SimNode => {
      const known = copies.get(node);
      if (known !== undefined) return known;
      if (node.kind === 'file') {
        const file = new SimFile(Buffer.from(node.live));
        copies.set(node, file);
        return file;
      }
      const directory = new SimDirectory();
      copies.set(node, directory);
      for (const [name, child] of node.live) directory.live.set(name, copy(child));
      directory.durable = new Map(directory.live);
      return directory;
    };
    return new SimulatedStorage({ model: this.model, ...options }, copy(this.root) as SimDirectory);
  }

  /** Every file under `path` with its live contents (for test assertions and failure reports). */
  listFiles(path = '/'): Map<string, Buffer> {
    const result = new Map<string, Buffer>();
    const walk = (directory: SimDirectory, prefix: string): void => {
      for (const [name, node] of [...directory.live].sort(([a], [b]) => a.localeCompare(b))) {
        const full = prefix === '/' ? `/${name}` : `${prefix}/${name}`;
        if (node.kind === 'file') result.set(full, node.live);
        else walk(node, full);
      }
    };
    const start = this.lookup(path);
    if (start?.kind === 'directory') walk(start, path);
    return result;
  }

  // ---- the seam: hot path -------------------------------------------------------------

  write(fd: number, buffer: Buffer, offset: number, length: number, position: number, callback: WriteCallback): void {
    this.submit('write', () => {
      this.checkFault('write', 'write');
      // The bytes are read when the call runs, as the thread pool does: the caller must leave them alone until then.
      return this.writeNow(fd, Buffer.from(buffer.subarray(offset, offset + length)), position, 'write');
    }, (error, value) => callback(error, error === null ? (value as number) : 0));
  }

  fdatasync(fd: number, callback: SyncCallback): void {
    this.submit('fdatasync', this.syncEffect(fd, 'fdatasync'), (error) => callback(error));
  }

  // ---- the seam: cold asynchronous paths ------------------------------------------------

  openAsync(path: string, flags: OpenFlags): Promise<number> {
    return this.promise('open', () => this.openNow(path, flags));
  }
  closeAsync(fd: number): Promise<void> {
    return this.promise('close', () => void this.closeNow(fd));
  }
  writevAsync(fd: number, buffers: readonly Uint8Array[], position: number): Promise<number> {
    return this.promise('writev', () => {
      this.checkFault('write', 'writev');
      return this.writeNow(fd, Buffer.concat(buffers), position, 'writev');
    });
  }
  fsyncAsync(fd: number): Promise<void> {
    return new Promise((resolve, reject) => this.submit('fsync', this.syncEffect(fd, 'fsync'), (error) => (error === null ? resolve() : reject(error))));
  }
  fstatAsync(fd: number): Promise<FileSize> {
    return this.promise('fstat', () => this.fstatNow(fd));
  }
  ftruncateAsync(fd: number, bytes: number): Promise<void> {
    return this.promise('ftruncate', () => void this.truncateNow(fd, bytes));
  }
  renameAsync(from: string, to: string): Promise<void> {
    return this.promise('rename', () => void this.renameNow(from, to));
  }
  unlinkAsync(path: string): Promise<void> {
    return this.promise('unlink', () => void this.unlinkNow(path));
  }
  copyFileExclusiveAsync(from: string, to: string): Promise<void> {
    return this.promise('copyfile', () => {
      const source = this.fileAt(from, 'copyfile');
      const { parent, name } = this.parentOf(to, 'copyfile');
      if (parent.live.has(name)) throw errnoError('EEXIST', 'copyfile', to);
      const file = new SimFile(Buffer.alloc(0));
      this.linkNow(parent, name, file);
      this.applyFileChange(file, { kind: 'write', seq: this.seq++, position: 0, bytes: Buffer.from(source.live) });
    });
  }
  mkdirAsync(path: string): Promise<void> {
    return this.promise('mkdir', () => void this.mkdirNow(path));
  }

  // ---- the seam: synchronous calls (start-up recovery, reads) ----------------------------

  openSync(path: string, flags: OpenFlags): number {
    return this.now('open', () => this.openNow(path, flags));
  }
  closeSync(fd: number): void {
    this.now('close', () => this.closeNow(fd));
  }
  readSync(fd: number, buffer: Buffer, offset: number, length: number, position: number): number {
    return this.now('read', () => {
      const file = this.openFile(fd, 'read');
      if (file.node.kind !== 'file') throw errnoError('EISDIR', 'read', file.path);
      const live = file.node.live;
      if (position >= live.length) return 0;
      return live.copy(buffer, offset, position, Math.min(live.length, position + length));
    });
  }
  writeSync(fd: number, buffer: Buffer, offset: number, length: number, position: number): number {
    return this.now('write', () => {
      this.checkFault('write', 'write');
      return this.writeNow(fd, Buffer.from(buffer.subarray(offset, offset + length)), position, 'write');
    });
  }
  fstatSync(fd: number): FileSize {
    return this.now('fstat', () => this.fstatNow(fd));
  }
  ftruncateSync(fd: number, bytes: number): void {
    this.now('ftruncate', () => this.truncateNow(fd, bytes));
  }
  fsyncSync(fd: number): void {
    this.now('fsync', this.syncEffect(fd, 'fsync'));
  }
  readdirSync(path: string): string[] {
    return this.now('readdir', () => [...this.directoryAt(path, 'scandir').live.keys()]);
  }
  readFileSync(path: string): Buffer {
    return this.now('readFile', () => Buffer.from(this.fileAt(path, 'open').live));
  }
  statSync(path: string): FileSize {
    return this.now('stat', () => {
      const node = this.lookup(path);
      if (node === undefined) throw errnoError('ENOENT', 'stat', path);
      return { size: node.kind === 'file' ? node.live.length : 4096 };
    });
  }
  existsSync(path: string): boolean {
    return this.now('exists', () => this.lookup(path) !== undefined);
  }

  // ---- calls, completion and the power ---------------------------------------------------

  /** Counts a call; false when the power is (or just went) off. */
  private enter(name: string): boolean {
    if (this.poweredOff) return false;
    this.calls += 1;
    this.trace.push(name);
    if (this.crashAfterCalls !== undefined && this.calls > this.crashAfterCalls) {
      this.powerOff();
      return false;
    }
    return true;
  }

  private powerOff(): void {
    this.poweredOff = true;
  }

  private now<T>(name: string, effect: () => T): T {
    if (!this.enter(name)) throw powerLostError(name);
    return effect();
  }

  private promise<T>(name: string, effect: () => T): Promise<T> {
    return new Promise((resolve, reject) => this.submit(name, effect, (error, value) => (error === null ? resolve(value as T) : reject(error))));
  }

  private submit(name: string, effect: () => unknown, done: InFlight['done']): void {
    const powered = this.enter(name);
    this.inFlight.push({ name, effect: powered ? effect : () => { throw powerLostError(name); }, done });
    if (!this.completionScheduled) {
      this.completionScheduled = true;
      setImmediate(this.completeOne);
    }
  }

  /** Completes one call in flight, chosen by the seed. */
  private readonly completeOne = (): void => {
    this.completionScheduled = false;
    const index = Math.floor(this.completionOrder() * this.inFlight.length);
    const [call] = this.inFlight.splice(index, 1);
    if (this.inFlight.length > 0) {
      this.completionScheduled = true;
      setImmediate(this.completeOne);
    }
    if (call === undefined) return;
    let value: unknown;
    try {
      if (this.poweredOff) throw powerLostError(call.name);
      value = call.effect();
    } catch (error) {
      call.done(error as NodeJS.ErrnoException, undefined);
      return;
    }
    call.done(null, value);
  };

  private checkFault(kind: 'write' | 'sync', syscall: string): void {
    this.faultCounts[kind] += 1;
    const fault = this.faults.find((f) => f.call === kind && f.nth === this.faultCounts[kind]);
    if (fault !== undefined) throw Object.assign(errnoError(fault.code, syscall), { simulated: 'injected fault' });
  }

  // ---- effects ---------------------------------------------------------------------------

  private lookup(path: string): SimNode | undefined {
    let node: SimNode = this.root;
    for (const part of path.split('/').filter((p) => p !== '' && p !== '.')) {
      if (node.kind !== 'directory') return undefined;
      const next: SimNode | undefined = node.live.get(part);
      if (next === undefined) return undefined;
      node = next;
    }
    return node;
  }

  private parentOf(path: string, syscall: string): { parent: SimDirectory; name: string } {
    const parent = this.lookup(dirname(path));
    if (parent === undefined) throw errnoError('ENOENT', syscall, path);
    if (parent.kind !== 'directory') throw errnoError('ENOTDIR', syscall, path);
    return { parent, name: basename(path) };
  }

  private fileAt(path: string, syscall: string): SimFile {
    const node = this.lookup(path);
    if (node === undefined) throw errnoError('ENOENT', syscall, path);
    if (node.kind !== 'file') throw errnoError('EISDIR', syscall, path);
    return node;
  }

  private directoryAt(path: string, syscall: string): SimDirectory {
    const node = this.lookup(path);
    if (node === undefined) throw errnoError('ENOENT', syscall, path);
    if (node.kind !== 'directory') throw errnoError('ENOTDIR', syscall, path);
    return node;
  }

  private openFile(fd: number, syscall: string): OpenFile {
    const open = this.fds.get(fd);
    if (open === undefined) throw errnoError('EBADF', syscall);
    return open;
  }

  private openNow(path: string, flags: OpenFlags): number {
    let node = this.lookup(path);
    if (flags === 'wx+' && node !== undefined) throw errnoError('EEXIST', 'open', path);
    const writable = flags !== 'r';
    if (node === undefined) {
      if (flags === 'r' || flags === 'r+') throw errnoError('ENOENT', 'open', path);
      const { parent, name } = this.parentOf(path, 'open');
      node = new SimFile(Buffer.alloc(0));
      this.linkNow(parent, name, node);
    } else if (node.kind === 'directory' && writable) {
      throw errnoError('EISDIR', 'open', path);
    } else if (node.kind === 'file' && (flags === 'w' || flags === 'w+') && node.live.length > 0) {
      this.applyFileChange(node, { kind: 'truncate', seq: this.seq++, size: 0 });
    }
    const fd = this.nextFd++;
    this.fds.set(fd, { node, path, writable });
    return fd;
  }

  private closeNow(fd: number): void {
    this.openFile(fd, 'close');
    this.fds.delete(fd);
  }

  private writeNow(fd: number, bytes: Buffer, position: number, syscall: string): number {
    const open = this.openFile(fd, syscall);
    if (open.node.kind !== 'file' || !open.writable) throw errnoError('EBADF', syscall, open.path);
    this.applyFileChange(open.node, { kind: 'write', seq: this.seq++, position, bytes });
    return bytes.length;
  }

  private truncateNow(fd: number, size: number): void {
    const open = this.openFile(fd, 'ftruncate');
    if (open.node.kind !== 'file' || !open.writable) throw errnoError('EINVAL', 'ftruncate', open.path);
    this.applyFileChange(open.node, { kind: 'truncate', seq: this.seq++, size });
  }

  private fstatNow(fd: number): FileSize {
    const open = this.openFile(fd, 'fstat');
    return { size: open.node.kind === 'file' ? open.node.live.length : 4096 };
  }

  /** The sync covers what completed before it was issued: the sequence number is taken now, applied at completion. */
  private syncEffect(fd: number, syscall: string): () => void {
    const upTo = this.seq;
    return () => {
      const open = this.openFile(fd, syscall);
      this.checkFault('sync', syscall);
      const node = open.node;
      if (node.kind === 'file') {
        while (node.pending.length > 0 && node.pending[0]!.seq < upTo) node.durable = applyChange(node.durable, node.pending.shift()!);
      } else {
        while (node.pending.length > 0 && node.pending[0]!.seq < upTo) applyEntryChange(node.durable, node.pending.shift()!);
      }
    };
  }

  private applyFileChange(file: SimFile, change: FileChange): void {
    file.live = applyChange(file.live, change);
    file.pending.push(change);
  }

  private linkNow(parent: SimDirectory, name: string, node: SimNode): void {
    parent.live.set(name, node);
    parent.pending.push({ kind: 'link', seq: this.seq++, name, node });
  }

  private renameNow(from: string, to: string): void {
    const source = this.parentOf(from, 'rename');
    const node = source.parent.live.get(source.name);
    if (node === undefined) throw errnoError('ENOENT', 'rename', from);
    const target = this.parentOf(to, 'rename');
    if (source.parent === target.parent) {
      source.parent.live.delete(source.name);
      source.parent.live.set(target.name, node);
      source.parent.pending.push({ kind: 'rename', seq: this.seq++, from: source.name, to: target.name, node });
      return;
    }
    // Across directories, each directory's half becomes durable with its own fsync.
    this.linkNow(target.parent, target.name, node);
    source.parent.live.delete(source.name);
    source.parent.pending.push({ kind: 'unlink', seq: this.seq++, name: source.name, node });
  }

  private unlinkNow(path: string): void {
    const { parent, name } = this.parentOf(path, 'unlink');
    const node = parent.live.get(name);
    if (node === undefined) throw errnoError('ENOENT', 'unlink', path);
    if (node.kind === 'directory') throw errnoError('EISDIR', 'unlink', path);
    parent.live.delete(name);
    parent.pending.push({ kind: 'unlink', seq: this.seq++, name, node });
  }

  private mkdirNow(path: string): void {
    const parts = path.split('/').filter((p) => p !== '' && p !== '.');
    let directory = this.root;
    for (const part of parts) {
      const next = directory.live.get(part);
      if (next === undefined) {
        const created = new SimDirectory();
        this.linkNow(directory, part, created);
        directory = created;
      } else if (next.kind === 'directory') {
        directory = next;
      } else {
        throw errnoError('ENOTDIR', 'mkdir', path);
      }
    }
  }

  // ---- after the power loss ----------------------------------------------------------------

  private survivingDirectory(directory: SimDirectory, copies: Map<SimNode, SimNode>): SimDirectory {
    const known = copies.get(directory);
    if (known !== undefined) return known as SimDirectory;
    const copy = new SimDirectory();
    copies.set(directory, copy);
    const entries = new Map(directory.durable);
    const changes = directory.pending;
    const prefix = this.model.entries === 'all-lost' ? 0 : Math.floor(this.crashChoices() * (changes.length + 1));
    changes.forEach((change, index) => {
      const applied = this.model.entries === 'any-subset' ? this.crashChoices() < 0.5 : index < prefix;
      if (applied) applyEntryChange(entries, change);
    });
    for (const [name, node] of entries) copy.live.set(name, node.kind === 'file' ? this.survivingFile(node, copies) : this.survivingDirectory(node, copies));
    copy.durable = new Map(copy.live);
    return copy;
  }

  private survivingFile(file: SimFile, copies: Map<SimNode, SimNode>): SimFile {
    const known = copies.get(file);
    if (known !== undefined) return known as SimFile;
    let contents = file.durable;
    const changes = file.pending;
    const cut = Math.floor(this.crashChoices() * (changes.length + 1));
    changes.forEach((change, index) => {
      const fate = this.fateOf(index, cut);
      if (fate === 'lands') contents = applyChange(contents, change);
      else if (fate === 'torn' && change.kind === 'write') contents = applyChange(contents, this.tear(change));
    });
    const copy = new SimFile(contents);
    copies.set(file, copy);
    return copy;
  }

  /** What becomes of the unsynced change at `index` of a file's changes, `cut` being where in-order write-back stopped. */
  private fateOf(index: number, cut: number): 'lands' | 'torn' | 'lost' {
    switch (this.model.writes) {
      case 'all-lost':
        return 'lost';
      case 'in-order':
        if (index !== cut) return index < cut ? 'lands' : 'lost';
        return this.crashChoices() < 0.5 ? 'torn' : 'lost';
      case 'reordered': {
        const r = this.crashChoices();
        return r < 0.45 ? 'lands' : r < 0.7 ? 'torn' : 'lost';
      }
    }
  }

  /** A write cut short: at a random byte or sector boundary, or with its range reading back as zeros. */
  private tear(write: FileWrite): FileWrite {
    const r = this.crashChoices();
    if (r < 0.2) return { ...write, bytes: Buffer.alloc(write.bytes.length) };
    let keep = Math.floor(this.crashChoices() * write.bytes.length);
    if (r < 0.6) keep -= (write.position + keep) % sectorBytes;
    return { ...write, bytes: write.bytes.subarray(0, Math.max(0, keep)) };
  }
}

/** The dry run and the run that loses the power must make the same calls up to the crash: the seed decides everything. */
export function expectSameCalls(dry: SimulatedStorage, live: SimulatedStorage): void {
  const made = live.trace.length;
  if (made < Math.min(dry.calls, live.crashPoint ?? Infinity) || live.trace.some((name, i) => name !== dry.trace[i])) {
    throw new Error(`not deterministic: the dry run made ${dry.calls} calls, this run ${made}, first difference at call ${live.trace.findIndex((name, i) => name !== dry.trace[i]) + 1}`);
  }
}

function applyChange(contents: Buffer, change: FileChange): Buffer {
  if (change.kind === 'truncate') {
    if (change.size <= contents.length) return contents.subarray(0, change.size);
    return Buffer.concat([contents, Buffer.alloc(change.size - contents.length)]);
  }
  const end = change.position + change.bytes.length;
  const result = Buffer.alloc(Math.max(contents.length, end));
  contents.copy(result, 0);
  change.bytes.copy(result, change.position);
  return result;
}

/** Applies one directory change to a set of entries; skipped when its source is not there (the change it depended on did not survive). */
function applyEntryChange(entries: Map<string, SimNode>, change: EntryChange): void {
  switch (change.kind) {
    case 'link':
      entries.set(change.name, change.node);
      return;
    case 'unlink':
      if (entries.get(change.name) === change.node) entries.delete(change.name);
      return;
    case 'rename':
      if (entries.get(change.from) !== change.node) return;
      entries.delete(change.from);
      entries.set(change.to, change.node);
  }
}
