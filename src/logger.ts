/**
 * Process logger. JSON lines by default (for machines and log shippers);
 * pretty, human-readable lines when a person runs Cairn in a terminal.
 * CAIRN_LOG_LEVEL sets the level (default info); CAIRN_LOG_FORMAT=json|pretty forces a format.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(options: { level?: string; pretty?: boolean } = {}): Logger {
  const level = options.level ?? process.env['CAIRN_LOG_LEVEL'] ?? 'info';
  const format = process.env['CAIRN_LOG_FORMAT'];
  const pretty = options.pretty ?? (format === 'pretty' || (format !== 'json' && process.stdout.isTTY === true));
  if (pretty) {
    return pino({ level, transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } });
  }
  return pino({ level, base: null });
}

/** A logger that discards everything: for tests and tools that must stay quiet. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
