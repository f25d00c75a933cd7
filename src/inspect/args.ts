/**
 * Flags, LSNs and times for `cairn inspect` and `cairn recover`. Each
 * subcommand declares its flags as a CommandSpec (the shared parser in
 * src/command-line parses them and prints --help); the subcommand reads them
 * as ParsedFlags. Every bad input becomes a UsageError, which the entry
 * points turn into one line on stderr and exit code 2 (never a stack trace).
 */
import { booleanOf, type CommandSpec, type FlagSpec, type ParsedCommand, UsageError } from '../command-line/flags.js';
import { parseDuration } from '../command-line/units.js';

export { UsageError } from '../command-line/flags.js';

export interface ParsedFlags {
  readonly strings: ReadonlyMap<string, string>;
  readonly booleans: ReadonlySet<string>;
}

/** The flags a parsed command was given, as the subcommands read them. */
export function flagsOf(parsed: ParsedCommand): ParsedFlags {
  const strings = new Map<string, string>();
  const booleans = new Set<string>();
  for (const flag of parsed.spec.flags) {
    const resolved = parsed.values.get(flag.name);
    if (resolved === undefined) continue;
    if (flag.kind === 'boolean') {
      if (booleanOf(parsed, flag.name)) booleans.add(flag.name);
    } else {
      strings.set(flag.name, resolved.value);
    }
  }
  return { strings, booleans };
}

export function requiredString(command: string, flags: ParsedFlags, name: string): string {
  const value = flags.strings.get(name);
  if (value === undefined) throw new UsageError(`${command}: --${name} is required`);
  return value;
}

// ───────────── value checks (a sentence saying what is wrong, or undefined) ─────────────

export function lsnProblem(value: string): string | undefined {
  return /^\d+$/.test(value) && Number.isSafeInteger(Number(value)) ? undefined : 'is not an LSN (a non-negative integer)';
}

export function positiveIntegerProblem(value: string): string | undefined {
  return /^\d+$/.test(value) && Number.isSafeInteger(Number(value)) && Number(value) >= 1 ? undefined : 'must be a positive integer';
}

export function timeProblem(value: string): string | undefined {
  if (parseDuration(value) !== undefined) return undefined;
  return isoPattern.test(value.trim()) && !Number.isNaN(Date.parse(value.trim())) ? undefined : 'is not a time: use ISO-8601 (2024-05-01T12:00:00Z) or a duration ago (90s, 30m, 2h, 7d)';
}

export function pointProblem(value: string): string | undefined {
  return /^\d+$/.test(value) ? lsnProblem(value) : timeProblem(value);
}

// ───────────── flags shared by the subcommands ─────────────

export const dataFlag: FlagSpec = { name: 'data', kind: 'value', valueName: 'DIR', required: true, help: 'the data directory to read, or a JetStream log nats://host:4222/stream (credentials: CAIRN_NATS_CREDS); read-only, safe on a live broker' };
export const jsonFlag: FlagSpec = { name: 'json', kind: 'boolean', help: 'one JSON object per line instead of a table' };
export const timeFlag = (name: string, help: string): FlagSpec => ({ name, kind: 'value', valueName: 'TIME', help, check: timeProblem });
export const lsnFlag = (name: string, help: string): FlagSpec => ({ name, kind: 'value', valueName: 'LSN', help, check: lsnProblem });
export const countFlag = (name: string, help: string, fallback?: string): FlagSpec => ({
  name, kind: 'value', valueName: 'N', help, check: positiveIntegerProblem, ...(fallback === undefined ? {} : { fallback }),
});

export type { CommandSpec };

/** A non-negative integer LSN. */
export function parseLsn(flag: string, value: string): number {
  return checked(flag, value, lsnProblem(value), Number);
}

export function parsePositiveInteger(flag: string, value: string): number {
  return checked(flag, value, positiveIntegerProblem(value), Number);
}

function checked<T>(flag: string, value: string, problem: string | undefined, convert: (value: string) => T): T {
  if (problem !== undefined) throw new UsageError(`--${flag} '${value}' ${problem}`);
  return convert(value);
}

const isoPattern = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * A point in time as epoch milliseconds: ISO-8601 (`2024-05-01T12:00:00Z`; a
 * time without a zone is local time, as Date reads it) or a duration ago
 * (`90s`, `30m`, `2h`, `7d` meaning that long before `now`).
 */
export function parseTime(flag: string, value: string, now: number): number {
  return checked(flag, value, timeProblem(value), () => {
    const ago = parseDuration(value);
    return ago !== undefined ? now - ago : Date.parse(value.trim());
  });
}

/** `--at`: digits are an LSN, anything else a time. */
export type PointInLog = { readonly lsn: number } | { readonly time: number };

export function parsePoint(flag: string, value: string, now: number): PointInLog {
  return /^\d+$/.test(value) ? { lsn: parseLsn(flag, value) } : { time: parseTime(flag, value, now) };
}
