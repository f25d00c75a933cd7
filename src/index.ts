/** Library entry point: embed Cairn in a Node program. */
export { startCairn, type RunningCairn } from './server.js';
export { parseServeArgs, type ServeConfig } from './config.js';
export { Broker, type BrokerOptions, type RecoveryReport } from './core/broker.js';
export * from './core/api.js';
export { MemoryLog } from './core/record-log.js';
export { createLogger, silentLogger } from './logger.js';
