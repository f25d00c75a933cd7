/**
 * The start-up check of the connection caps against the open-files limit
 * (src/descriptor-budget.ts): this machine's 20,000 is below MQTT 10,000 +
 * AMQP 10,000 + HTTP 256 + the broker's own, the situation of issue 11.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { brokerDescriptorsReserved, checkDescriptorBudget, openFilesLimit } from '../../src/descriptor-budget.js';

const procLimits = (soft: string): string => [
  'Limit                     Soft Limit           Hard Limit           Units     ',
  'Max processes             63704                63704                processes ',
  `Max open files            ${soft.padEnd(21)}20000                files     `,
].join('\n');

function warningsOf(check: (logger: pino.Logger) => void): Array<Record<string, unknown>> {
  const warnings: Array<Record<string, unknown>> = [];
  check(pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line) as Record<string, unknown>) }));
  return warnings;
}

describe('the descriptor budget', () => {
  it('reads the soft open-files limit from /proc/self/limits text, and nothing when unlimited or absent', () => {
    expect(openFilesLimit(procLimits('20000'))).toBe(20_000);
    expect(openFilesLimit(procLimits('unlimited'))).toBeUndefined();
    expect(openFilesLimit(undefined)).toBeUndefined();
  });

  it('warns when the caps plus the reserve pass the limit, naming the LimitNOFILE to set, and is quiet below it', () => {
    const caps = { mqtt: 10_000, amqp: 10_000, http: 256 };
    const over = warningsOf((logger) => checkDescriptorBudget(caps, logger, 20_000));
    expect(over).toHaveLength(1);
    expect(over[0]).toMatchObject({ needed: 20_256 + brokerDescriptorsReserved, openFilesLimit: 20_000 });
    expect(String(over[0]!['msg'])).toContain('LimitNOFILE=32768');
    expect(warningsOf((logger) => checkDescriptorBudget(caps, logger, 65_536))).toEqual([]);
    expect(warningsOf((logger) => checkDescriptorBudget(caps, logger, undefined))).toEqual([]);
  });
});
