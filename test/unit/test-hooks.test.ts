/**
 * CAIRN_TEST_HOOK_SYNC_LANE (src/test-hooks.ts): the crash tests force each sync lane with it, so a
 * loaded machine still runs the event-loop lane. The forced lane holds whatever the sync times, the
 * real file system stays (the loop lane is only taken on it), the first use is logged once, and
 * anything but loop or pool is refused.
 */
import { pino } from 'pino';
import type { Logger } from '../../src/logger.js';
import { describe, expect, it } from 'vitest';
import { forcedSyncLaneMessage, syncLaneVariable, testHooksFrom } from '../../src/test-hooks.js';

function capturingLogger(): { logger: Logger; messages: string[] } {
  const messages: string[] = [];
  const logger: Logger = pino({ level: 'info' }, { write: (line: string) => void messages.push((JSON.parse(line) as { msg: string }).msg) });
  return { logger, messages };
}

describe('CAIRN_TEST_HOOK_SYNC_LANE', () => {
  it('puts every lone batch on the forced lane, even after a slow sync on the loop, and says so once', () => {
    for (const lane of ['loop', 'pool'] as const) {
      const { logger, messages } = capturingLogger();
      const hooks = testHooksFrom({ [syncLaneVariable]: lane }, logger);
      expect(hooks.description).toBe(`${syncLaneVariable}=${lane}`);
      expect(hooks.internals.logFileSystem).toBeUndefined();
      const lanes = hooks.internals.syncLanes!;
      expect(messages).toEqual([]);
      expect(lanes.next()).toBe(lane);
      lanes.noteLoopSync(1_000);
      expect(lanes.next()).toBe(lane);
      expect(messages).toEqual([forcedSyncLaneMessage]);
    }
  });

  it('is off unless set, and refuses anything but loop or pool', () => {
    const { logger } = capturingLogger();
    expect(testHooksFrom({}, logger)).toEqual({ internals: {}, description: undefined });
    expect(() => testHooksFrom({ [syncLaneVariable]: 'thread' }, logger)).toThrow(`${syncLaneVariable} must be loop or pool, got 'thread'`);
  });
});
