/**
 * The payload view of a connection's last PUBLISH decoded from a lent read
 * (socket-reads.ts): a sequential publisher's reads are lent the same view
 * of the read buffer while their length stays the same, and a PUBLISH in the
 * same view with its payload at the same offset gets the same payload view
 * again instead of a new one (Node 20's Buffer#subarray reads `buffer` and
 * `byteOffset` through V8's generic property load and builds a FastBuffer:
 * about 700 instructions a PUBLISH, issue 18).
 *
 * Invariant: `view` is `packet.subarray(start)` (a view's bytes are fixed by
 * the view object, whatever they hold now). Only lent views are remembered:
 * they are views of the one read buffer, which lives anyway; a packet of a
 * buffer of its own kept here would stay alive with it.
 */
import { isLentView } from '../socket-reads.js';

export class PayloadViews {
  private packet: Buffer | undefined;
  private start = 0;
  private view: Buffer | undefined;

  /** `packet.subarray(start)`: the remembered view when it is of the same lent view at the same offset. */
  of(packet: Buffer, start: number): Buffer {
    if (packet === this.packet && start === this.start) return this.view as Buffer;
    const view = packet.subarray(start);
    if (isLentView(packet)) {
      this.packet = packet;
      this.start = start;
      this.view = view;
    }
    return view;
  }
}
