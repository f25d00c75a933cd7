/**
 * An offline reader of a JetStream log (`cairn inspect … --data nats://host/stream`):
 * the same LogReader the inspector uses on a data directory, over the stream's
 * messages and its snapshot bucket. Only reads: it takes no writer lease,
 * publishes nothing and creates no stream or bucket, so it is safe beside a
 * serving node.
 *
 * The stream is read once, when the reader opens (as the log itself reads it
 * at start-up): every message decoded into its frames and checked as
 * stream-message.ts says. A bad message is kept as a bad record for
 * `verify` and skipped by reads, instead of stopping the read there. The
 * stream is one "segment" to the inspector; a fence (an empty message: a
 * writer's takeover) is an LSN without a record. The bucket's snapshot is
 * served as a snapshot file of a virtual directory (the reader's file system
 * answers reads of that one path from memory), so the inspector's projection
 * code reads it as it reads a data directory's.
 */
import { join } from 'node:path';
import { jetstreamManager, JetStreamApiCodes, JetStreamApiError, jetstream } from '@nats-io/jetstream';
import { CorruptRecordError, LogError } from '../errors.js';
import { nodeFileSystem, type LogFileSystem } from '../file-system.js';
import { checkReadFrom, type ReadFrom } from '../read.js';
import type { BadRecord, LogReader, VerifyReport } from '../reader.js';
import type { LogRecord, Lsn } from '../record.js';
import { encodeSnapshotHeader, snapshotFileName, type SnapshotFileInfo } from '../snapshot.js';
import type { JetStreamAddress } from './jetstream-address.js';
import { connectToNats, type NatsConnection } from './nats-connection.js';
import { SnapshotBucket } from './snapshot-bucket.js';
import type { StreamState } from './stream-reader.js';
import { decodeHeldFrame, decodeStreamMessage } from './stream-message.js';

/** The directory the reader says it reads: no such directory exists; only its snapshot file is served. */
const virtualDir = '/nonexistent/cairn-jetstream-snapshots';

/** What the reader reads by: the name the inspector prints for the stream, as it prints a segment file. */
export function streamSegmentName(address: JetStreamAddress): string {
  return `stream ${address.stream}`;
}

export async function openJetStreamLogReader(address: JetStreamAddress, options: { credsFile?: string | undefined } = {}): Promise<LogReader> {
  const connection = await connectToNats(address, { credsFile: options.credsFile, name: 'cairn inspect' });
  try {
    const manager = await jetstreamManager(connection);
    const state = await manager.streams.info(address.stream).then((info) => info.state, (error: unknown) => {
      if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) {
        throw new LogError('ENOENT', `no stream ${address.stream} on ${address.servers.join(',')}: is this the --log address the broker serves?`);
      }
      throw error;
    });
    const segment = streamSegmentName(address);
    const { records, badRecords, bytes, firstLsn, lastLsn } = await readStream(connection, address.stream, segment, state);
    // Replicas matter only to a bucket's creation, which a reader never does.
    const snapshot = await (await SnapshotBucket.open(connection, address.stream, 1)).load();
    const snapshots: SnapshotFileInfo[] = [];
    let fileSystem: LogFileSystem = nodeFileSystem;
    if (snapshot !== undefined) {
      const file = snapshotFileName(snapshot.lsn);
      const contents = Buffer.concat([encodeSnapshotHeader(snapshot.lsn, snapshot.data), snapshot.data]);
      fileSystem = { ...nodeFileSystem, readFileSync: (path) => (path === join(virtualDir, file) ? contents : nodeFileSystem.readFileSync(path)) };
      snapshots.push({ file, lsn: snapshot.lsn, bytes: contents.length, valid: true });
    }
    const held = records.filter((record): record is LogRecord => record !== undefined);
    const segmentInfo = {
      file: segment, firstLsn, lastLsn: Math.max(firstLsn - 1, lastLsn), bytes,
      ...(held.length > 0 ? { firstTimestamp: held[0]!.timestamp, lastTimestamp: held[held.length - 1]!.timestamp } : {}),
    };
    const report: VerifyReport = {
      ok: badRecords.length === 0, segments: 1, records: held.length, bytes, firstLsn, lastLsn: segmentInfo.lastLsn,
      tornTail: undefined, badRecords, badSegments: [], snapshots,
    };
    return {
      dir: virtualDir,
      fileSystem,
      tornTail: undefined,
      read: (from: ReadFrom = {}) => {
        checkReadFrom(from);
        return readHeld(records, firstLsn, from);
      },
      segments: () => [segmentInfo],
      snapshots: () => snapshots,
      verify: () => report,
    };
  } finally {
    await connection.close();
  }
}

interface StreamContents {
  /** records[i] is the record of LSN firstLsn + i (undefined: a fence, or in a bad message). */
  readonly records: Array<LogRecord | undefined>;
  readonly badRecords: BadRecord[];
  readonly bytes: number;
  readonly firstLsn: Lsn;
  readonly lastLsn: Lsn;
}

/**
 * Every message of the stream, decoded (stream-message.ts). A bad message is a bad record at the LSN it
 * should have started at; the read goes on, and the next good message says where LSNs continue.
 */
async function readStream(connection: NatsConnection, stream: string, segment: string, state: StreamState): Promise<StreamContents> {
  const records: Array<LogRecord | undefined> = [];
  const badRecords: BadRecord[] = [];
  let bytes = 0;
  let firstLsn: Lsn | undefined = state.messages === 0 ? state.last_seq + 1 : undefined;
  let expectedLsn = firstLsn;
  if (state.messages > 0) {
    const consumer = await jetstream(connection).consumers.get(stream, { opt_start_seq: Math.max(1, state.first_seq) });
    const messages = await consumer.consume({ max_messages: 1024 });
    try {
      for await (const message of messages) {
        bytes += message.data.length;
        try {
          const contents = decodeStreamMessage(stream, message, expectedLsn);
          firstLsn ??= contents.firstLsn;
          contents.frames.forEach((frame, i) => {
            records[contents.firstLsn + i - firstLsn!] = frame === undefined ? undefined : decodeHeldFrame(frame);
          });
          expectedLsn = contents.firstLsn + contents.frames.length;
        } catch (error) {
          badRecords.push({ segment, lsn: error instanceof CorruptRecordError ? error.lsn : expectedLsn ?? message.seq, offset: error instanceof CorruptRecordError ? error.offset : 0, reason: error instanceof Error ? error.message : String(error) });
          expectedLsn = undefined;
        }
        if (message.seq >= state.last_seq) break;
      }
    } finally {
      messages.stop();
    }
  }
  firstLsn ??= Math.max(1, state.first_seq);
  return { records, badRecords, bytes, firstLsn, lastLsn: firstLsn + records.length - 1 };
}

/** The records from `from` on, as the file reader reads them (read.ts): from an LSN, then from the first at or after a time. */
function* readHeld(records: ReadonlyArray<LogRecord | undefined>, firstLsn: Lsn, from: ReadFrom): IterableIterator<LogRecord> {
  let timeReached = from.time === undefined;
  for (let i = Math.max(0, (from.lsn ?? 0) - firstLsn); i < records.length; i++) {
    const record = records[i];
    if (record === undefined) continue;
    if (!timeReached) {
      if (record.timestamp < from.time!) continue;
      timeReached = true;
    }
    yield record;
  }
}
