/**
 * A large answer handed to the socket a piece at a time, with a turn of the
 * event loop between pieces (or, when the socket's buffer is full, its
 * 'drain'): one write of a 300 KB answer held the loop for about a
 * millisecond in the kernel's copy into a loopback socket, the longest single
 * hold of a scrape round (issue 15). The bytes sent are the same; only the
 * number of writes changes.
 *
 * Invariant: the pieces are written in order, each once, and end() is called
 * with the last one, so 'finish' means every byte reached the kernel (a pooled
 * buffer may then be reused, answer-bytes.ts). A response destroyed meanwhile
 * gets no further writes.
 */

/** What writeInPieces needs of a node:http response. */
export interface PieceSink {
  readonly destroyed: boolean;
  write(piece: Buffer): boolean;
  end(piece: Buffer): unknown;
  once(event: 'drain', listener: () => void): unknown;
}

/**
 * Bytes per write: the kernel's copy of this much into a loopback socket takes about as long as one slice of a
 * rendered answer (answer-slices.ts: each piece is one more interruption of the other clients, so pieces are as
 * large as a slice is long).
 */
export const writePieceBytesMax = 64 * 1024;

export function writeInPieces(response: PieceSink, bytes: Buffer, pieceBytesMax = writePieceBytesMax): void {
  let at = 0;
  const writeNext = (): void => {
    if (response.destroyed) return;
    const end = Math.min(at + pieceBytesMax, bytes.length);
    const piece = bytes.subarray(at, end);
    at = end;
    if (at === bytes.length) {
      response.end(piece);
      return;
    }
    if (response.write(piece)) setImmediate(writeNext);
    else response.once('drain', writeNext);
  };
  writeNext();
}
