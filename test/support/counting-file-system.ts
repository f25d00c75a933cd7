/**
 * The real file system as the log sees it (LogFileSystem), counting the
 * read side: positioned reads and their bytes, opens and the descriptors open
 * now (by path), and whole-file reads of snapshots. Tests of what a read or a
 * start-up costs count through it.
 */
import { nodeFileSystem, type LogFileSystem } from '../../src/log/file-system.js';

export interface CountingFileSystem extends LogFileSystem {
  reads: number;
  bytesRead: number;
  opens: number;
  snapshotReads: number;
  readonly openFiles: Map<number, string>;
}

export function countingFileSystem(): CountingFileSystem {
  const counting: CountingFileSystem = {
    ...nodeFileSystem,
    reads: 0,
    bytesRead: 0,
    opens: 0,
    snapshotReads: 0,
    openFiles: new Map<number, string>(),
    openSync: (path, flags) => {
      const fd = nodeFileSystem.openSync(path, flags);
      counting.opens += 1;
      counting.openFiles.set(fd, path);
      return fd;
    },
    closeSync: (fd) => {
      counting.openFiles.delete(fd);
      nodeFileSystem.closeSync(fd);
    },
    readSync: (fd, buffer, offset, length, position) => {
      const read = nodeFileSystem.readSync(fd, buffer, offset, length, position);
      counting.reads += 1;
      counting.bytesRead += read;
      return read;
    },
    readFileSync: (path) => {
      if (path.endsWith('.snap')) counting.snapshotReads += 1;
      return nodeFileSystem.readFileSync(path);
    },
  };
  return counting;
}
