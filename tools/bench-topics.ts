/**
 * Topic-routing figures: the AMQP TopicBindingIndex trie against a list of
 * per-pattern compiled matchers (the alternative it was chosen over, kept here so
 * the choice can be re-measured), and the MQTT SubscriptionIndex against a linear
 * scan with topicMatchesFilter. Inputs come from a seeded generator; the seed is
 * printed so a surprising run can be repeated.
 */
import { performance } from 'node:perf_hooks';
import { TopicBindingIndex } from '../src/core/binding-index.js';
import { SubscriptionIndex } from '../src/core/subscription-index.js';
import { topicMatchesFilter } from '../src/core/topic-filter.js';

const bindingsCount = 10_000;
const queuesCount = 1_000;
const keysCount = 2_000;
const wordsPerPositionCount = 10;
const benchSeed = 0xca1f;
/** Each measured loop runs at least this long, so timer resolution does not matter. */
const measureMillisecondsMin = 300;

export async function benchTopics(): Promise<void> {
  console.log(`bench-topics: seed ${benchSeed}, ${bindingsCount} bindings, ${queuesCount} queues`);
  benchAmqpBindings(createRandom(benchSeed));
  benchMqttSubscriptions(createRandom(benchSeed + 1));
  // Keeps the signature async so the caller can await it like the other benches.
  await Promise.resolve();
}

function benchAmqpBindings(random: () => number): void {
  const bindings = Array.from({ length: bindingsCount }, () => ({
    pattern: randomWords(random, { star: 0.15, hash: 0.05 }),
    queue: `q${Math.floor(random() * queuesCount)}`,
  }));
  const keys = Array.from({ length: keysCount }, () => randomWords(random, { star: 0, hash: 0 }));

  let trie = new TopicBindingIndex<string>();
  const trieBuildMilliseconds = timeOnce(() => {
    trie = new TopicBindingIndex<string>();
    for (const { pattern, queue } of bindings) trie.add(pattern, queue);
  });
  let compiled = new CompiledPatternList<string>();
  const compiledBuildMilliseconds = timeOnce(() => {
    compiled = new CompiledPatternList<string>();
    for (const { pattern, queue } of bindings) compiled.add(pattern, queue);
  });

  // Both must route identically, or the figures compare different work.
  let routedQueues = 0;
  for (const key of keys) {
    const fromTrie = trie.match(key);
    const fromList = compiled.match(key);
    if (fromTrie.size !== fromList.size || [...fromTrie].some((queue) => !fromList.has(queue))) {
      throw new Error(`bench-topics: trie and compiled list disagree on '${key}'`);
    }
    routedQueues += fromTrie.size;
  }
  console.log(`  amqp topic: ${trie.nodeCount} trie nodes, ${(routedQueues / keys.length).toFixed(1)} queues per key on average`);
  report('amqp trie', trieBuildMilliseconds, matchesPerSecond(keys, (key) => trie.match(key)));
  report('amqp compiled list', compiledBuildMilliseconds, matchesPerSecond(keys, (key) => compiled.match(key)));
}

function benchMqttSubscriptions(random: () => number): void {
  const subscriptions = Array.from({ length: bindingsCount }, () => ({
    filter: randomFilter(random),
    subscriber: `c${Math.floor(random() * queuesCount)}`,
    qos: Math.floor(random() * 3) as 0 | 1 | 2,
  }));
  const topics = Array.from({ length: keysCount }, () => randomWords(random, { star: 0, hash: 0 }).replaceAll('.', '/'));
  let index = new SubscriptionIndex<string>();
  const buildMilliseconds = timeOnce(() => {
    index = new SubscriptionIndex<string>();
    for (const { filter, subscriber, qos } of subscriptions) index.add(filter, subscriber, qos);
  });
  report('mqtt subscription trie', buildMilliseconds, matchesPerSecond(topics, (topic) => index.match(topic)));
  report('mqtt linear scan', 0, matchesPerSecond(topics, (topic) => {
    const result = new Map<string, 0 | 1 | 2>();
    for (const { filter, subscriber, qos } of subscriptions) {
      if (!topicMatchesFilter(topic, filter)) continue;
      const previous = result.get(subscriber);
      if (previous === undefined || qos > previous) result.set(subscriber, qos);
    }
    return result;
  }));
}

/**
 * The alternative to the trie: every distinct pattern compiled once into a
 * closure, all of them tried for every routing key.
 */
class CompiledPatternList<Q> {
  private readonly entries = new Map<string, { matches: (words: string[]) => boolean; queues: Set<Q> }>();

  add(pattern: string, queue: Q): void {
    let entry = this.entries.get(pattern);
    if (entry === undefined) {
      entry = { matches: compilePattern(pattern), queues: new Set() };
      this.entries.set(pattern, entry);
    }
    entry.queues.add(queue);
  }

  match(routingKey: string): Set<Q> {
    const words = routingKey === '' ? [] : routingKey.split('.');
    const result = new Set<Q>();
    for (const { matches, queues } of this.entries.values()) {
      if (matches(words)) for (const queue of queues) result.add(queue);
    }
    return result;
  }
}

function compilePattern(pattern: string): (words: string[]) => boolean {
  const patternWords = pattern === '' ? [] : pattern.split('.');
  if (!patternWords.includes('#')) {
    // Without '#' the word counts must be equal: one comparison per word.
    return (words) => words.length === patternWords.length &&
      patternWords.every((patternWord, index) => patternWord === '*' || patternWord === words[index]);
  }
  return (words) => {
    let reachable = new Uint8Array(words.length + 1);
    reachable[0] = 1;
    for (const patternWord of patternWords) {
      const next = new Uint8Array(words.length + 1);
      for (let position = 0; position <= words.length; position++) {
        if (reachable[position] !== 1) continue;
        if (patternWord === '#') {
          next.fill(1, position);
          break;
        }
        if (position < words.length && (patternWord === '*' || patternWord === words[position])) next[position + 1] = 1;
      }
      reachable = next;
    }
    return reachable[words.length] === 1;
  };
}

function randomWords(random: () => number, wildcards: { star: number; hash: number }): string {
  const length = 3 + Math.floor(random() * 3);
  const words: string[] = [];
  for (let position = 0; position < length; position++) {
    const roll = random();
    if (roll < wildcards.hash) words.push('#');
    else if (roll < wildcards.hash + wildcards.star) words.push('*');
    else words.push(`w${position}x${Math.floor(random() * wordsPerPositionCount)}`);
  }
  return words.join('.');
}

/** An MQTT filter with the same shape: '*' becomes '+', and '#' may only end it. */
function randomFilter(random: () => number): string {
  const levels = randomWords(random, { star: 0.15, hash: 0 }).replaceAll('*', '+').split('.');
  if (random() < 0.05) levels[levels.length - 1] = '#';
  return levels.join('/');
}

function matchesPerSecond(inputs: string[], match: (input: string) => unknown): number {
  let count = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < measureMillisecondsMin) {
    for (const input of inputs) match(input);
    count += inputs.length;
    elapsed = performance.now() - start;
  }
  return (count / elapsed) * 1000;
}

function timeOnce(action: () => void): number {
  const start = performance.now();
  action();
  return performance.now() - start;
}

function report(name: string, buildMilliseconds: number, perSecond: number): void {
  const build = buildMilliseconds > 0 ? `build ${buildMilliseconds.toFixed(1)} ms, ` : '';
  console.log(`  ${name.padEnd(24)} ${build}${Math.round(perSecond).toLocaleString('en-US')} matches/s`);
}

/** mulberry32: a tiny deterministic generator, enough for benchmark inputs. */
function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), state | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}
