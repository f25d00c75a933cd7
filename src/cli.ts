#!/usr/bin/env node
/**
 * The `cairn` command: serve | inspect | recover | passwd. Every command's
 * flags are declared as data and parsed by one parser (src/command-line), so
 * `--help` works everywhere and errors look alike.
 *
 * Exit codes (documented in the README, "Running in production"):
 *   0   success, --help, stopped by SIGINT/SIGTERM, or stdout closed early
 *       (`cairn inspect records … | head` ends quietly)
 *   1   refused at run time: a port in use, a data directory in use or
 *       damaged, an unreadable users file … (one line on stderr)
 *   2   usage: an unknown command, flag or config-file key, a bad or missing
 *       value (one line on stderr naming the flag)
 *   70  internal error (a bug: a broken invariant), with its stack
 *   74  the log failed while serving (fdatasync/write error, disk full):
 *       nothing more could be acknowledged; a restart replays the log
 */
import { parseCommand, UsageError } from './command-line/flags.js';
import { renderHelp } from './command-line/help.js';
import { version } from './version.js';

const usage = `cairn ${version} — a message broker whose only source of truth is one append-only log

usage:
  cairn serve [flags]                       start the broker
  cairn inspect <segments|records|verify|state|trace|stats> --data DIR [flags]
  cairn recover --from DIR --to NEWDIR (--lsn N | --time T)
  cairn passwd --users FILE --user NAME     set a user's password (read from stdin)
  cairn version

'cairn COMMAND --help' lists a command's flags, defaults and environment twins.

example:
  cairn serve --data ./data --mqtt-port 1883
`;

const exitUsage = 2;
const exitFailure = 1;
const exitBug = 70;

async function main(command: string | undefined, args: string[]): Promise<number> {
  const io = { stdout: process.stdout, stderr: process.stderr, isTTY: process.stderr.isTTY === true };
  switch (command) {
    // Each command loads only its own modules: `inspect` never loads the broker, `--help` starts fast.
    case 'serve': return (await import('./command-line/serve.js')).runServe(args, process.env, process.stdout);
    case 'inspect': return (await import('./inspect/index.js')).runInspect(args, io);
    case 'recover': return (await import('./inspect/index.js')).runRecover(args, io);
    case 'passwd': {
      const { passwdCommand, runPasswd } = await import('./command-line/passwd.js');
      const parsed = parseCommand(passwdCommand, args);
      if (parsed.help) {
        process.stdout.write(renderHelp(passwdCommand));
        return 0;
      }
      return runPasswd(parsed, process.stdin, process.stderr);
    }
    case '--version': case 'version': process.stdout.write(`${version}\n`); return 0;
    case '--help': case '-h': case 'help': process.stdout.write(usage); return 0;
    case undefined: process.stderr.write(usage); return exitUsage;
    default: process.stderr.write(`cairn: unknown command '${command}' (cairn --help lists the commands)\n`); return exitUsage;
  }
}

/** Operating errors carry a string code (ENOENT, ELISTEN, …); anything else, or an assertion, is a bug. */
function isOperatingError(error: unknown): error is Error {
  return error instanceof Error && error.name !== 'AssertionError' && typeof (error as { code?: unknown }).code === 'string';
}

const [command, ...args] = process.argv.slice(2);
if (command !== 'serve') {
  // The reader went away (`| head`): what it wanted is printed; nothing is left to say.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
}
main(command, args).then(
  (code) => { process.exitCode = code; },
  (error: unknown) => {
    const where = command === undefined ? 'cairn' : `cairn ${command}`;
    if (error instanceof UsageError) {
      process.stderr.write(`${where}: ${error.message}\n`);
      process.exitCode = exitUsage;
    } else if (isOperatingError(error)) {
      process.stderr.write(`${where}: ${error.message}\n`);
      process.exitCode = exitFailure;
    } else {
      process.stderr.write(`${where}: internal error: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
      process.exitCode = exitBug;
    }
  },
);
