/**
 * Entry points the CLI calls: `cairn inspect <subcommand>` and `cairn recover`.
 * Both return an exit code and never throw for bad input: a UsageError (bad
 * flag, missing directory, LSN or time out of range) becomes one line on
 * stderr and exit code 2. Anything else is a bug or an I/O failure and is
 * reported as one line too (exit 1), so the operator never sees a stack trace.
 */
import { LogError } from '../log/index.js';
import { UsageError } from './args.js';
import type { InspectIo } from './progress.js';
import { inspectRecords } from './records.js';
import { runRecoverCommand } from './recover.js';
import { inspectSegments } from './segments.js';
import { inspectState } from './state.js';
import { inspectStats } from './stats.js';
import { inspectTrace } from './trace.js';
import { inspectVerify } from './verify.js';

export type { InspectIo } from './progress.js';
export { UsageError } from './args.js';

const subcommands: Readonly<Record<string, (args: readonly string[], io: InspectIo) => Promise<number>>> = {
  segments: inspectSegments,
  records: inspectRecords,
  verify: inspectVerify,
  state: inspectState,
  trace: inspectTrace,
  stats: inspectStats,
};

export const inspectUsage = `usage: cairn inspect <${Object.keys(subcommands).join('|')}> --data DIR [flags]`;

export function runInspect(args: string[], io: InspectIo): Promise<number> {
  const [name, ...rest] = args;
  const subcommand = name === undefined ? undefined : subcommands[name];
  if (subcommand === undefined) {
    io.stderr.write(`${name === undefined ? 'cairn inspect: a subcommand is required' : `cairn inspect: unknown subcommand '${name}'`}; ${inspectUsage}\n`);
    return Promise.resolve(2);
  }
  return guarded(`inspect ${name!}`, () => subcommand(rest, io), io);
}

export function runRecover(args: string[], io: InspectIo): Promise<number> {
  return guarded('recover', () => runRecoverCommand(args, io), io);
}

async function guarded(command: string, run: () => Promise<number>, io: InspectIo): Promise<number> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`cairn ${command}: ${error.message}\n`);
      return 2;
    }
    // A damaged log met while reading (bad record in the middle): say where, as verify would.
    if (error instanceof LogError) {
      io.stderr.write(`cairn ${command}: ${error.message} (run 'cairn inspect verify' for the full report)\n`);
      return 1;
    }
    io.stderr.write(`cairn ${command}: failed: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
