/**
 * One command-line parser for every `cairn` command. A command is declared as
 * data (CommandSpec): each flag has a name, a kind, a default, an optional
 * CAIRN_* environment twin, help text and a validation; the same table drives
 * parsing, `--help`, the config file and `--print-config`.
 *
 * Tokens come from node's util.parseArgs; what it leaves lenient is made
 * strict here, with one-line messages that name the flag:
 *   - a flag that takes a value never takes the next flag as its value
 *     (`--data --mqtt-port 0` is "--data needs a value"), but `--data=-x` may;
 *   - unknown flags and positional arguments are refused; a repeated flag
 *     takes its last value (so a wrapper script's defaults can be overridden);
 *   - a boolean flag takes no value.
 * Every such error is a UsageError: the CLI prints its message and exits 2.
 *
 * Precedence of a value: flag > environment > config file > default, and
 * each resolved value remembers where it came from (for --print-config).
 */
import { parseArgs } from 'node:util';

export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly code = 'EUSAGE';
}

export interface FlagSpec {
  /** Long name without dashes: `segment-bytes`. */
  readonly name: string;
  /** `boolean` flags take no value; every other kind takes one. */
  readonly kind: 'boolean' | 'value';
  /** What the value looks like in help: DIR, N, SIZE, DURATION. */
  readonly valueName?: string;
  readonly help: string;
  /** The default as text (what help and --print-config show); undefined: no default (unset). */
  readonly fallback?: string;
  /** The CAIRN_* environment twin, when the flag has one. */
  readonly env?: string;
  readonly required?: boolean;
  /** Check a value; return a sentence saying what is wrong, or undefined when it is good. */
  readonly check?: (value: string) => string | undefined;
}

export interface CommandSpec {
  /** `serve`, `inspect records`, … as typed after `cairn`. */
  readonly name: string;
  readonly summary: string;
  readonly flags: readonly FlagSpec[];
  /** Lines of example use, shown by --help. */
  readonly examples: readonly string[];
  /** Extra paragraphs for --help (units, rules between flags). */
  readonly notes?: readonly string[];
}

export type ValueSource = 'flag' | 'environment' | 'file' | 'default';

export interface ResolvedValue {
  readonly value: string;
  readonly source: ValueSource;
  /** For `environment`: the variable; for `file`: `FILE:LINE`. */
  readonly origin?: string;
}

/** The values the user set (and the defaults), by flag name; booleans hold 'true'. */
export interface ParsedCommand {
  readonly spec: CommandSpec;
  readonly values: ReadonlyMap<string, ResolvedValue>;
  readonly help: boolean;
}

/** A value read from a config file, with where it was written. */
export interface FileValue {
  readonly value: string;
  readonly origin: string;
}

export const helpFlag: FlagSpec = { name: 'help', kind: 'boolean', help: 'print this help and exit' };

/** Reads a config file into values by flag name (see config-file.ts). */
export type ConfigFileReader = (file: string) => ReadonlyMap<string, FileValue>;

/**
 * Parse argv for one command. When the command has a `config` flag and it is
 * set (by flag or environment), `readFile` supplies the file's values.
 */
export function parseCommand(spec: CommandSpec, args: readonly string[], env: NodeJS.ProcessEnv = {}, readFile?: ConfigFileReader): ParsedCommand {
  const given = readFlags(spec, args);
  if (given.has('help')) return { spec, values: new Map(), help: true };
  const configFlag = spec.flags.find((flag) => flag.name === 'config');
  const configFile = configFlag === undefined ? undefined : resolve(configFlag, given.get('config'), env, undefined)?.value;
  const fileValues = configFile === undefined || configFile === '' || readFile === undefined ? new Map<string, FileValue>() : readFile(configFile);
  const values = new Map<string, ResolvedValue>();
  for (const flag of spec.flags) {
    const resolved = resolve(flag, given.get(flag.name), env, fileValues.get(flag.name));
    if (resolved === undefined) {
      if (flag.required) throw new UsageError(`--${flag.name} is required (see cairn ${spec.name} --help)`);
      continue;
    }
    checkValue(spec, flag, resolved);
    values.set(flag.name, resolved);
  }
  return { spec, values, help: false };
}

function resolve(flag: FlagSpec, fromFlag: string | undefined, env: NodeJS.ProcessEnv, fromFile: FileValue | undefined): ResolvedValue | undefined {
  if (fromFlag !== undefined) return { value: fromFlag, source: 'flag' };
  const fromEnv = flag.env === undefined ? undefined : env[flag.env];
  if (flag.env !== undefined && fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, source: 'environment', origin: flag.env };
  if (fromFile !== undefined) return { value: fromFile.value, source: 'file', origin: fromFile.origin };
  if (flag.fallback !== undefined) return { value: flag.fallback, source: 'default' };
  return undefined;
}

function checkValue(spec: CommandSpec, flag: FlagSpec, resolved: ResolvedValue): void {
  if (flag.kind === 'boolean' && resolved.source !== 'flag' && !['true', 'false'].includes(resolved.value)) {
    throw new UsageError(`${where(flag, resolved)} must be true or false, got '${resolved.value}'`);
  }
  const problem = flag.check?.(resolved.value);
  if (problem !== undefined) throw new UsageError(`${where(flag, resolved)} '${resolved.value}' ${problem}`);
}

/** How to name a value's origin in an error: the flag, its environment twin, or the file line. */
function where(flag: FlagSpec, resolved: ResolvedValue): string {
  if (resolved.source === 'environment') return `${resolved.origin} (--${flag.name})`;
  if (resolved.source === 'file') return `${flag.name} at ${resolved.origin}`;
  return `--${flag.name}`;
}

/** The flags given on the command line, by name; booleans as 'true'. */
function readFlags(spec: CommandSpec, args: readonly string[]): Map<string, string> {
  const byName = new Map(spec.flags.map((flag) => [flag.name, flag]));
  byName.set(helpFlag.name, helpFlag);
  const options = Object.fromEntries([...byName.values()].map((flag) => [flag.name, { type: flag.kind === 'boolean' ? 'boolean' as const : 'string' as const }]));
  const { tokens } = parseArgs({ args: [...args], options: { ...options, h: { type: 'boolean' } }, strict: false, allowPositionals: true, tokens: true });
  const given = new Map<string, string>();
  for (const token of tokens) {
    if (token.kind === 'option-terminator') throw new UsageError(`unexpected '--': cairn ${spec.name} takes only --flags`);
    if (token.kind === 'positional') throw new UsageError(`unexpected argument '${token.value}' (cairn ${spec.name} takes only --flags; see --help)`);
    const name = token.name === 'h' ? 'help' : token.name;
    const flag = byName.get(name);
    if (flag === undefined) throw new UsageError(`unknown flag ${token.rawName} (see cairn ${spec.name} --help)`);
    given.set(name, flagValue(spec, flag, token));
  }
  return given;
}

interface OptionToken { readonly rawName: string; readonly value?: string | undefined; readonly inlineValue?: boolean | undefined }

function flagValue(spec: CommandSpec, flag: FlagSpec, token: OptionToken): string {
  if (flag.kind === 'boolean') {
    if (token.value !== undefined) throw new UsageError(`--${flag.name} takes no value`);
    return 'true';
  }
  const value = token.value;
  if (value === undefined) throw new UsageError(`--${flag.name} needs a value (${flag.valueName ?? 'VALUE'})`);
  // parseArgs hands `--data --mqtt-port` the next flag as its value; that is a missing value, not a directory name.
  if (token.inlineValue !== true && looksLikeFlag(value)) {
    throw new UsageError(`--${flag.name} needs a value (${flag.valueName ?? 'VALUE'}), but the next argument is the flag ${value} (write --${flag.name}=${value} if that is the value)`);
  }
  return value;
}

/** `--x` or `-x`; a negative number such as `-5` is a value (a bad one, said by its flag's check). */
function looksLikeFlag(text: string): boolean {
  return /^--?[a-zA-Z]/.test(text);
}

/** The value of a flag; the spec gives every flag read this way a default or requires it. */
export function valueOf(parsed: ParsedCommand, name: string): string {
  const resolved = parsed.values.get(name);
  if (resolved === undefined) throw new UsageError(`--${name} is required`);
  return resolved.value;
}

export function optionalValueOf(parsed: ParsedCommand, name: string): string | undefined {
  const value = parsed.values.get(name)?.value;
  return value === '' ? undefined : value;
}

export function booleanOf(parsed: ParsedCommand, name: string): boolean {
  return parsed.values.get(name)?.value === 'true';
}
