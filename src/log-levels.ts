/**
 * The log levels and formats `cairn serve` accepts (pino's levels), apart from
 * the logger itself so that parsing flags and printing help never load pino.
 */
export const logLevels = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof logLevels)[number];
export const logFormats = ['auto', 'json', 'pretty'] as const;
export type LogFormat = (typeof logFormats)[number];
