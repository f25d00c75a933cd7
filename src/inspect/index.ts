/**
 * Entry points the CLI calls: `cairn inspect <subcommand>` and `cairn recover`.
 * Each subcommand is a CommandSpec (its flags as data) and a run function.
 * Both return an exit code and never throw for bad input: a UsageError (bad
 * flag, missing directory, LSN or time out of range) becomes one line on
 * stderr and exit code 2; `--help` prints the subcommand's flags and exits 0.
 * Anything else is a bug or an I/O failure and is reported as one line too
 * (exit 1), so the operator never sees a stack trace.
 */
import { parseCommand, type CommandSpec } from '../command-line/flags.js';
import { renderHelp } from '../command-line/help.js';
import { LogError } from '../log/index.js';
import { flagsOf, UsageError, type ParsedFlags } from './args.js';
import type { InspectIo } from './progress.js';
import { inspectRecords, recordsCommand } from './records.js';
import { recoverCommand, runRecoverCommand } from './recover.js';
import { inspectSegments, segmentsCommand } from './segments.js';
import { inspectState, stateCommand } from './state.js';
import { inspectStats, statsCommand } from './stats.js';
import { inspectTrace, traceCommand } from './trace.js';
import { inspectVerify, verifyCommand } from './verify.js';

export type { InspectIo } from './progress.js';
export { UsageError } from './args.js';

interface Subcommand {
  readonly spec: CommandSpec;
  readonly run: (flags: ParsedFlags, io: InspectIo) => Promise<number>;
}

export const inspectSubcommands: Readonly<Record<string, Subcommand>> = {
  segments: { spec: segmentsCommand, run: inspectSegments },
  records: { spec: recordsCommand, run: inspectRecords },
  verify: { spec: verifyCommand, run: inspectVerify },
  state: { spec: stateCommand, run: inspectState },
  trace: { spec: traceCommand, run: inspectTrace },
  stats: { spec: statsCommand, run: inspectStats },
};

export const inspectUsage = `usage: cairn inspect <${Object.keys(inspectSubcommands).join('|')}> --data DIR [flags]`;

export function inspectHelp(): string {
  const rows = Object.entries(inspectSubcommands).map(([name, { spec }]) => `  ${name.padEnd(10)} ${spec.summary.split('\n')[0]!}`);
  return `${inspectUsage}\n\nReads a data directory offline (read-only, safe on a live broker's directory).\n\nsubcommands:\n${rows.join('\n')}\n\n'cairn inspect SUBCOMMAND --help' lists a subcommand's flags.\n\nexample:\n  cairn inspect records --data ./data --kind msg --since 2h\n`;
}

export function runInspect(args: string[], io: InspectIo): Promise<number> {
  const [name, ...rest] = args;
  if (name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(inspectHelp());
    return Promise.resolve(0);
  }
  const subcommand = name === undefined ? undefined : inspectSubcommands[name];
  if (subcommand === undefined) {
    io.stderr.write(`${name === undefined ? 'cairn inspect: a subcommand is required' : `cairn inspect: unknown subcommand '${name}'`}; ${inspectUsage}\n`);
    return Promise.resolve(2);
  }
  return guarded(subcommand, rest, io);
}

export function runRecover(args: string[], io: InspectIo): Promise<number> {
  return guarded({ spec: recoverCommand, run: runRecoverCommand }, args, io);
}

async function guarded(command: Subcommand, args: readonly string[], io: InspectIo): Promise<number> {
  const name = command.spec.name;
  try {
    const parsed = parseCommand(command.spec, args);
    if (parsed.help) {
      io.stdout.write(renderHelp(command.spec));
      return 0;
    }
    return await command.run(flagsOf(parsed), io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`cairn ${name}: ${error.message}\n`);
      return 2;
    }
    // A damaged log met while reading (bad record in the middle): say where, as verify would.
    if (error instanceof LogError) {
      io.stderr.write(`cairn ${name}: ${error.message} (run 'cairn inspect verify' for the full report)\n`);
      return 1;
    }
    io.stderr.write(`cairn ${name}: failed: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
