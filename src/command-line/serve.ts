/**
 * `cairn serve`: parse the configuration (flags, environment, --config file),
 * answer --help and --print-config, or start the broker and run until SIGINT
 * or SIGTERM (SIGHUP reloads the ACL and TLS files); a failed log stops the broker and exits 74 (fail-stop, see
 * server.ts). Start-up failures are thrown to the CLI, which prints one line.
 */
import { booleanOf } from './flags.js';
import { renderHelp } from './help.js';
import { printConfig } from './print-config.js';
import { readServeCommand, serveCommand, serveConfigOf, serveFileKeys } from '../config.js';

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
  // Loaded only now: --help and --print-config need neither the broker nor the logger.
  const [{ createLogger }, { startCairn }, { testHooksFrom }, { enableStageTimingFrom }] = await Promise.all([import('../logger.js'), import('../server.js'), import('../test-hooks.js'), import('../stage-timing.js')]);
  const logger = createLogger({ level: config.logLevel, format: config.logFormat });
  const hooks = testHooksFrom(env, logger);
  if (hooks.description !== undefined) logger.warn({ hook: hooks.description }, 'test hook active: this broker injects faults');
  // A bench's per-stage timing of round trips (stage-timing.ts); off unless CAIRN_STAGE_TIMING names a file.
  enableStageTimingFrom(env);
  const running = await startCairn(config, logger, hooks.internals);
  const stop = (signal: string): void => {
    logger.info({ signal }, 'shutting down');
    running.close().catch((error: unknown) => logger.error({ err: error }, 'shutdown failed'));
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
  // SIGHUP re-reads the ACL and TLS files (startCairn's reload logs what failed); connections stay up.
  const reload = (): void => { running.reload().catch((error: unknown) => logger.error({ err: error }, 'reload failed')); };
  process.on('SIGHUP', reload);
  // The fatal line is logged and the listeners closed by then; exit even if some timer would keep the process up.
  return running.stopped.then(() => 0, () => process.exit(exitCodeLogFailed));
}
