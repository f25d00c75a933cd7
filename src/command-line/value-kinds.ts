/**
 * The kinds of flag values, each a check (for the parser's one-line error)
 * and a conversion (only ever called on a value the check accepted). A flag
 * spreads its kind into its FlagSpec: `{ name: 'segment-bytes', ...sizeKind(4096), … }`.
 */
import { durationExamples, parseDuration, parseSize, sizeExamples } from './units.js';

export interface ValueKind<T> {
  readonly kind: 'value';
  readonly valueName: string;
  readonly check: (value: string) => string | undefined;
  readonly convert: (value: string) => T;
}

export function sizeKind(minBytes: number): ValueKind<number> {
  return {
    kind: 'value', valueName: 'SIZE',
    check: (value) => {
      const bytes = parseSize(value);
      if (bytes === undefined) return `is not a size: give bytes or a number with a unit (${sizeExamples})`;
      return bytes < minBytes ? `is too small: the least is ${minBytes} bytes` : undefined;
    },
    convert: (value) => parseSize(value)!,
  };
}

export function countKind(min: number): ValueKind<number> {
  return {
    kind: 'value', valueName: 'N',
    check: (value) => (/^\d+$/.test(value) && Number.isSafeInteger(Number(value)) && Number(value) >= min ? undefined : `must be an integer ≥ ${min}`),
    convert: Number,
  };
}

export const durationKind: ValueKind<number> = {
  kind: 'value', valueName: 'DURATION',
  check: (value) => (parseDuration(value) === undefined ? `is not a duration: give a number and a unit (${durationExamples})` : undefined),
  convert: (value) => parseDuration(value)!,
};

/** A TCP port; `off` (undefined) disables the listener, 0 picks a free port. */
export const portKind: ValueKind<number | undefined> = {
  kind: 'value', valueName: 'PORT',
  check: (value) => (value === 'off' || (/^\d+$/.test(value) && Number(value) <= 65535) ? undefined : "is not a port: use 0–65535, 0 for any free port, or 'off'"),
  convert: (value) => (value === 'off' ? undefined : Number(value)),
};

export function choiceKind<const T extends string>(choices: readonly T[]): ValueKind<T> {
  return {
    kind: 'value', valueName: choices.join('|'),
    check: (value) => ((choices as readonly string[]).includes(value) ? undefined : `is not one of ${choices.join(', ')}`),
    convert: (value) => value as T,
  };
}

export const textKind = (valueName: string): ValueKind<string> => ({ kind: 'value', valueName, check: () => undefined, convert: (value) => value });
