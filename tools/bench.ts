/**
 * `npm run bench [suite…]`: runs the benchmark suites in the order listed
 * below (all of them, or only the named ones: `node dist/tools/bench.js log`).
 * Adding a suite is one import and one entry in `suites`. Suites print their
 * own figures; benchmarks are not tests and never fail the run on a target.
 */
import { benchAmqp } from './bench-amqp.js';
import { benchBacklog } from './bench-backlog.js';
import { benchCollections } from './bench-collections.js';
import { benchFuzz } from './bench-fuzz.js';
import { benchHa } from './bench-ha.js';
import { benchInspect } from './bench-inspect.js';
import { benchLog } from './bench-log.js';
import { benchMqtt } from './bench-mqtt.js';
import { benchReplay } from './bench-replay.js';
import { benchScrape } from './bench-scrape.js';
import { benchScrapeCost } from './bench-scrape-cost.js';
import { benchScrapeTurns } from './bench-scrape-turns.js';
import { benchTopics } from './bench-topics.js';

interface BenchSuite {
  readonly name: string;
  readonly run: () => Promise<void>;
}

const suites: readonly BenchSuite[] = [
  { name: 'log', run: benchLog },
  { name: 'replay', run: benchReplay },
  { name: 'topics', run: benchTopics },
  { name: 'mqtt', run: benchMqtt },
  { name: 'scrape', run: benchScrape },
  { name: 'scrape-cost', run: benchScrapeCost },
  { name: 'scrape-turns', run: benchScrapeTurns },
  { name: 'amqp', run: benchAmqp },
  { name: 'backlog', run: benchBacklog },
  { name: 'inspect', run: benchInspect },
  { name: 'collections', run: benchCollections },
  { name: 'fuzz', run: benchFuzz },
  { name: 'ha', run: benchHa },
];

async function main(): Promise<void> {
  const requested = process.argv.slice(2);
  const unknown = requested.filter((name) => !suites.some((suite) => suite.name === name));
  if (unknown.length > 0) {
    console.error(`unknown benchmark suite(s): ${unknown.join(', ')}; known: ${suites.map((s) => s.name).join(', ')}`);
    process.exitCode = 2;
    return;
  }
  const selected = requested.length === 0 ? suites : suites.filter((suite) => requested.includes(suite.name));
  for (const suite of selected) {
    console.log(`\n=== ${suite.name}`);
    const started = performance.now();
    await suite.run();
    console.log(`=== ${suite.name}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
}

await main();
