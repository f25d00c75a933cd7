/**
 * `cairn serve`: parse the configuration (flags, environment, --config file),
 * answer --help and --print-config, or start the broker and run until SIGINT
 * or SIGTERM; a failed log stops the broker and exits 74 (fail-stop, see
 * server.ts). Start-up failures are thrown to the CLI, which prints one line.
 */
import { booleanOf } from './flags.js';
import { renderHelp } from './help.js';
import { printConfig } from './print-config.js';
import { readServeCommand, serveCommand, serveConfigOf, serveFileKeys } from '../config.js';
import { createLogger } from '../logger.js';
import { startCairn } from '../server.js';
import { testHooksFrom } from '../test-hooks.js';

// sysexits.h EX_IOERR: the broker stopped itself because its log failed (fail-stop).
const exitCodeLogFailed = 74;

export async function runServe(args: readonly string[], env: NodeJS.ProcessEnv, stdout: NodeJS.WritableStream): Promise<number> {
  const parsed = readServeCommand(args, env);
  if (parsed.help) {
    stdout.write(renderHelp(serveCommand));
    return 0;
  }
  if (booleanOf(parsed, 'print-config')) {
    stdout.write(printConfig(parsed, serveFileKeys));
    return 0;
  }
  const config = serveConfigOf(parsed);
  const logger = createLogger({ level: config.logLevel, format: config.logFormat });
  const hooks = testHooksFrom(env);
  if (hooks.description !== undefined) logger.warn({ hook: hooks.description }, 'test hook active: this broker injects faults');
  const running = await startCairn(config, logger, hooks.internals);
  const stop = (signal: string): void => {
    logger.info({ signal }, 'shutting down');
    running.close().catch((error: unknown) => logger.error({ err: error }, 'shutdown failed'));
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
  // The fatal line is logged and the listeners closed by then; exit even if some timer would keep the process up.
  return running.stopped.then(() => 0, () => process.exit(exitCodeLogFailed));
}
