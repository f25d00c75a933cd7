/**
 * Process logger. JSON lines by default (for machines and log shippers);
 * pretty, human-readable lines when a person runs Cairn in a terminal.
 * `cairn serve --log-level` / CAIRN_LOG_LEVEL set the level (default info) and
 * `--log-format` / CAIRN_LOG_FORMAT=json|pretty|auto the format; an embedding
 * program passes them as options, or lets createLogger read the variables.
 */
import { pino, type Logger } from 'pino';
import { UsageError } from './command-line/flags.js';
import { logFormats, logLevels, type LogFormat, type LogLevel } from './log-levels.js';

export type { Logger };

export { logFormats, logLevels, type LogFormat, type LogLevel } from './log-levels.js';

export interface LoggerOptions {
  readonly level?: LogLevel;
  readonly format?: LogFormat;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? fromEnvironment('CAIRN_LOG_LEVEL', logLevels) ?? 'info';
  const format = options.format ?? fromEnvironment('CAIRN_LOG_FORMAT', logFormats) ?? 'auto';
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  if (pretty) {
    return pino({ level, transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } });
  }
  return pino({ level, base: null });
}

function fromEnvironment<T extends string>(variable: string, allowed: readonly T[]): T | undefined {
  const value = process.env[variable];
  if (value === undefined || value === '') return undefined;
  if (!(allowed as readonly string[]).includes(value)) throw new UsageError(`${variable} '${value}' is not one of ${allowed.join(', ')}`);
  return value as T;
}

/** A logger that discards everything: for tests and tools that must stay quiet. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
