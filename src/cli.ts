#!/usr/bin/env node
/**
 * The `cairn` command: serve | inspect | recover | passwd.
 * Every failure a user can cause ends with a one-line message and a non-zero
 * exit code, never a stack trace; only a bug (an assertion) prints one.
 *
 * Exit codes (documented in the README, "Running in production"):
 *   0   stopped by SIGINT/SIGTERM, or the command succeeded
 *   1   refused: bad configuration, a data directory in use or damaged, …
 *   2   usage: an unknown command
 *   70  internal error (a bug: a broken invariant)
 *   74  the log failed while serving (fdatasync/write error, disk full):
 *       nothing more could be acknowledged; a restart replays the log
 */
import { ConfigError, parseServeArgs, serveHelp } from './config.js';
import { createLogger } from './logger.js';
import { startCairn } from './server.js';
import { runInspect, runRecover } from './inspect/index.js';
import { setUserPassword } from './auth/users.js';
import { testHooksFrom } from './test-hooks.js';
import { version } from './version.js';

// sysexits.h EX_IOERR: the broker stopped itself because its log failed (fail-stop).
const exitCodeLogFailed = 74;

const usage = `cairn ${version} — a message broker whose only source of truth is one append-only log

usage:
  cairn serve [flags]                       start the broker (cairn serve --help for flags)
  cairn inspect <segments|records|verify|state|trace|stats> --data DIR [flags]
  cairn recover --from DIR --to NEWDIR (--lsn N | --time T)
  cairn passwd --users FILE --user NAME     set a user's password (read from stdin)
`;

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...args] = argv;
  const io = { stdout: process.stdout, stderr: process.stderr, isTTY: process.stderr.isTTY === true };
  switch (command) {
    case 'serve': return serve(args);
    case 'inspect': return runInspect([...args], io);
    case 'recover': return runRecover([...args], io);
    case 'passwd': return passwd(args);
    case '--version': case 'version': process.stdout.write(`${version}\n`); return 0;
    case undefined: case '--help': case '-h': case 'help': process.stdout.write(usage); return command === undefined ? 2 : 0;
    default: process.stderr.write(`cairn: unknown command '${command}'\n\n${usage}`); return 2;
  }
}

async function serve(args: readonly string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(serveHelp());
    return 0;
  }
  const config = parseServeArgs(args, process.env);
  const logger = createLogger();
  const hooks = testHooksFrom(process.env);
  if (hooks.description !== undefined) logger.warn({ hook: hooks.description }, 'test hook active: this broker injects faults');
  const running = await startCairn(config, logger, hooks.internals);
  // SIGHUP re-reads the ACL and TLS files (startCairn's reload logs what failed); connections stay up.
  const reload = (): void => { running.reload().catch((error: unknown) => logger.error({ err: error }, 'reload failed')); };
  process.on('SIGHUP', reload);
  const stop = (signal: string): void => {
    logger.info({ signal }, 'shutting down');
    running.close().catch((error: unknown) => logger.error({ err: error }, 'shutdown failed'));
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
  // The fatal line is logged and the listeners closed by then; exit even if some timer would keep the process up.
  return running.stopped.then(() => 0, () => process.exit(exitCodeLogFailed));
}

async function passwd(args: readonly string[]): Promise<number> {
  const flag = (name: string): string | undefined => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : undefined; };
  const file = flag('users');
  const user = flag('user');
  if (!file || !user) {
    process.stderr.write('cairn passwd: needs --users FILE and --user NAME; the password is read from stdin\n');
    return 2;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const password = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
  if (password === '') {
    process.stderr.write('cairn passwd: empty password on stdin\n');
    return 2;
  }
  const outcome = await setUserPassword({ file, username: user, password });
  process.stderr.write(`user '${user}' ${outcome} in ${file}\n`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (error: unknown) => {
    const known = error instanceof ConfigError || (error instanceof Error && 'code' in error && typeof (error as { code: unknown }).code === 'string' && error.name !== 'AssertionError');
    process.stderr.write(known ? `cairn: ${(error as Error).message}\n` : `cairn: internal error: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
    process.exitCode = known ? 1 : 70;
  },
);
