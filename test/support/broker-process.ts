/** Crash tests run `cairn serve` as a child process: the same launcher the benchmarks use. */
export { runCairnCommand, startCairnProcess as startBroker, tempDataDir, type CairnProcess as BrokerProcess } from '../../tools/cairn-process.js';
