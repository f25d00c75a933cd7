/**
 * Command-line parsing for `cairn inspect` and `cairn recover`: flags, LSNs
 * and times. Every bad input becomes a UsageError, which the entry points turn
 * into one line on stderr and exit code 2 (never a stack trace).
 */
import { parseDuration } from '../config.js';

export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly code = 'EUSAGE';
}

export type FlagKind = 'string' | 'boolean';
export type FlagSpec = Readonly<Record<string, FlagKind>>;

export interface ParsedFlags {
  readonly strings: ReadonlyMap<string, string>;
  readonly booleans: ReadonlySet<string>;
}

/** `--name value`, `--name=value` and boolean `--name`; anything else is refused with its name. */
export function parseFlags(command: string, args: readonly string[], spec: FlagSpec): ParsedFlags {
  const strings = new Map<string, string>();
  const booleans = new Set<string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith('--')) throw new UsageError(`${command}: unexpected argument '${arg}'`);
    const equals = arg.indexOf('=');
    const name = equals < 0 ? arg.slice(2) : arg.slice(2, equals);
    const kind = spec[name];
    if (kind === undefined) throw new UsageError(`${command}: unknown flag --${name} (known: ${Object.keys(spec).map((f) => `--${f}`).join(', ')})`);
    if (kind === 'boolean') {
      if (equals >= 0) throw new UsageError(`${command}: --${name} takes no value`);
      booleans.add(name);
      continue;
    }
    const value = equals >= 0 ? arg.slice(equals + 1) : args[++i];
    if (value === undefined || (equals < 0 && value.startsWith('--'))) throw new UsageError(`${command}: --${name} needs a value`);
    if (strings.has(name)) throw new UsageError(`${command}: --${name} given twice`);
    strings.set(name, value);
  }
  return { strings, booleans };
}

export function requiredString(command: string, flags: ParsedFlags, name: string): string {
  const value = flags.strings.get(name);
  if (value === undefined) throw new UsageError(`${command}: --${name} is required`);
  return value;
}

/** A non-negative integer LSN. */
export function parseLsn(flag: string, value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new UsageError(`--${flag} '${value}' is not an LSN (a non-negative integer)`);
  return n;
}

export function parsePositiveInteger(flag: string, value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) throw new UsageError(`--${flag} '${value}' must be a positive integer`);
  return n;
}

const isoPattern = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * A point in time as epoch milliseconds: ISO-8601 (`2024-05-01T12:00:00Z`; a
 * time without a zone is local time, as Date reads it) or a duration ago
 * (`90s`, `30m`, `2h`, `7d` meaning that long before `now`).
 */
export function parseTime(flag: string, value: string, now: number): number {
  const ago = parseDuration(value);
  if (ago !== undefined) return now - ago;
  const ms = isoPattern.test(value.trim()) ? Date.parse(value.trim()) : Number.NaN;
  if (Number.isNaN(ms)) throw new UsageError(`--${flag} '${value}' is not a time: use ISO-8601 (2024-05-01T12:00:00Z) or a duration ago (90s, 30m, 2h, 7d)`);
  return ms;
}

/** `--at`: digits are an LSN, anything else a time. */
export type PointInLog = { readonly lsn: number } | { readonly time: number };

export function parsePoint(flag: string, value: string, now: number): PointInLog {
  return /^\d+$/.test(value) ? { lsn: parseLsn(flag, value) } : { time: parseTime(flag, value, now) };
}
