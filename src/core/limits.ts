/**
 * Every bound the core enforces, as named constants with the unit last.
 * Checked against each other once, when the broker starts.
 */
import { assert } from '../assert.js';

export interface CoreLimits {
  /** Messages a persistent or clean MQTT session may hold (queued + in flight); beyond it the oldest is dropped. */
  readonly sessionQueueMessagesMax: number;
  /** Payload bytes a session may hold; beyond it the oldest messages are dropped. */
  readonly sessionQueueBytesMax: number;
  /** Ready messages an AMQP queue may hold; beyond it the oldest is dropped. */
  readonly queueReadyMessagesMax: number;
  /** Payload bytes of ready messages an AMQP queue may hold; beyond it the oldest are dropped. */
  readonly queueReadyBytesMax: number;
  /** Recently published message bodies kept in memory, so consumers that keep up never read the disk. */
  readonly messageCacheBytes: number;
  /** Unacknowledged QoS 1/2 PUBLISHes (plus owed PUBRELs) per MQTT session. */
  readonly sessionInflightMessagesMax: number;
  /** Take a snapshot after this many records since the last one (0: never). */
  readonly snapshotEveryRecords: number;
  /** Before each snapshot, move the few live messages out of old segments so that retention can remove them (segment-release.ts). */
  readonly releaseSegments: boolean;
}

export const defaultCoreLimits: CoreLimits = {
  sessionQueueMessagesMax: 4096,
  sessionQueueBytesMax: 256 * 1024 * 1024,
  queueReadyMessagesMax: 10_000_000,
  queueReadyBytesMax: 4 * 1024 * 1024 * 1024,
  messageCacheBytes: 16 * 1024 * 1024,
  sessionInflightMessagesMax: 1024,
  snapshotEveryRecords: 100_000,
  releaseSegments: true,
};

export function checkCoreLimits(limits: CoreLimits): void {
  assert(Number.isInteger(limits.sessionQueueMessagesMax) && limits.sessionQueueMessagesMax >= 1, 'sessionQueueMessagesMax must be a positive integer');
  assert(Number.isInteger(limits.queueReadyMessagesMax) && limits.queueReadyMessagesMax >= 1, 'queueReadyMessagesMax must be a positive integer');
  for (const name of ['sessionQueueBytesMax', 'queueReadyBytesMax'] as const) assert(Number.isSafeInteger(limits[name]) && limits[name] >= 1, `${name} must be a positive integer`);
  assert(Number.isSafeInteger(limits.messageCacheBytes) && limits.messageCacheBytes >= 0, 'messageCacheBytes must be a non-negative integer');
  // Packet ids are derived from seqs modulo 65535: the window must stay far below that.
  assert(limits.sessionInflightMessagesMax >= 1 && limits.sessionInflightMessagesMax <= 1024, 'sessionInflightMessagesMax must be in 1..1024');
  assert(limits.snapshotEveryRecords >= 0, 'snapshotEveryRecords must be >= 0');
}
