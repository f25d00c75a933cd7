/**
 * Sizes and durations as a person writes them on a command line or in a
 * config file. Pure: a string in, a number out, or undefined when the text is
 * not one (the caller names the flag in its error).
 *
 * Sizes: plain bytes (`4096`), decimal units (`kB`, `MB`, `GB`, `TB`: powers
 * of 1000, as disk makers and SI count) and binary units (`KiB`, `MiB`, `GiB`,
 * `TiB`: powers of 1024); a single-letter `K`, `M`, `G`, `T` is binary, as
 * `--segment-bytes 64M` usually means 64 MiB. Units are case-insensitive
 * except that `b` alone is not accepted (bits or bytes is ambiguous).
 * Durations: a number and a unit, `ms`, `s`, `m`, `h`, `d`, `w` (`500ms`, `30s`, `2h`, `7d`).
 */

const sizeUnitsBytes: Readonly<Record<string, number>> = {
  '': 1, b: 1,
  kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12,
  k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40,
  kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40,
};

/** A byte count, or undefined when `text` is not a size (or not a whole number of bytes). */
export function parseSize(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*([a-zA-Z]*)$/.exec(text.trim());
  if (!match) return undefined;
  const unit = match[2]!;
  if (unit === 'b') return undefined;
  const factor = sizeUnitsBytes[unit.toLowerCase()];
  if (factor === undefined) return undefined;
  const bytes = Number(match[1]) * factor;
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

const durationUnitsMs: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Milliseconds, or undefined when `text` is not a number followed by a unit. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)$/.exec(text.trim());
  if (!match) return undefined;
  return Math.round(Number(match[1]) * durationUnitsMs[match[2]!]!);
}

export const sizeExamples = '4096, 512KiB, 64MB, 64MiB, 1GiB';
export const durationExamples = '500ms, 30s, 15m, 2h, 7d';
