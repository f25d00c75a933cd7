/**
 * The log contract (log-contract.ts) on the in-memory log the core's property tests run on
 * (core/record-log.ts MemoryLog): no segments, torn tails or retention; "reopen" is the same object.
 */
import { describe } from 'vitest';
import { MemoryLog } from '../../src/core/record-log.js';
import { logContract, type LogFactory } from './log-contract.js';

const memoryLogFactory: LogFactory = {
  capabilities: { segments: false, tornTails: false, retention: false },
  create: () => {
    const log = new MemoryLog();
    return Promise.resolve({
      log,
      reopen: () => Promise.resolve(log),
      failNextSync: () => {
        log.failed = new Error('injected failure: the log refuses appends');
        return Promise.resolve();
      },
      destroy: () => Promise.resolve(),
    });
  },
};

describe('the log contract: MemoryLog', () => logContract(memoryLogFactory));
