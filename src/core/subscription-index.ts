/**
 * SubscriptionIndex routes a published MQTT topic to the subscribers whose
 * filters match it, without looking at every filter.
 *
 * It is a trie keyed by filter levels. Each node has literal children, at most one
 * '+' child and at most one '#' child; a subscription lives on the node its whole
 * filter leads to. A '#' node is always a leaf, because '#' is the last level.
 *
 * Invariants (checked by assertions and by test/property/topic-subscription-index):
 * - `filtersBySubscriber` is exactly the reverse of the subscriptions in the trie,
 *   and `subscriptionCount` is the number of (subscriber, filter) pairs in it;
 * - every node except the root holds a subscription or has a child: removal prunes
 *   the nodes it empties, so an index that had everything removed is a bare root.
 */
import { assert } from '../assert.js';
import { validateTopicFilter } from './topic-filter.js';

type Qos = 0 | 1 | 2;

interface TrieNode<S> {
  readonly literalChildren: Map<string, TrieNode<S>>;
  plusChild: TrieNode<S> | undefined;
  hashChild: TrieNode<S> | undefined;
  readonly subscribers: Map<S, Qos>;
  /** The subscribers here whose subscription is MQTT 5 No Local; created on first use. */
  noLocal: Set<S> | undefined;
}

function createNode<S>(): TrieNode<S> {
  return { literalChildren: new Map(), plusChild: undefined, hashChild: undefined, subscribers: new Map(), noLocal: undefined };
}

function isEmptyNode<S>(node: TrieNode<S>): boolean {
  return node.subscribers.size === 0 && node.literalChildren.size === 0 &&
    node.plusChild === undefined && node.hashChild === undefined;
}

function childOf<S>(node: TrieNode<S>, level: string): TrieNode<S> | undefined {
  if (level === '+') return node.plusChild;
  if (level === '#') return node.hashChild;
  return node.literalChildren.get(level);
}

function detachChild<S>(node: TrieNode<S>, level: string): void {
  if (level === '+') node.plusChild = undefined;
  else if (level === '#') node.hashChild = undefined;
  else node.literalChildren.delete(level);
}

export class SubscriptionIndex<S> {
  private readonly root: TrieNode<S> = createNode();
  private readonly filtersBySubscriber = new Map<S, Map<string, Qos>>();
  private subscriptionCount = 0;
  private trieNodeCount = 1;

  /** The number of (subscriber, filter) pairs. */
  get size(): number {
    return this.subscriptionCount;
  }

  /** The number of trie nodes including the root; for tests of pruning and for metrics. */
  get nodeCount(): number {
    return this.trieNodeCount;
  }

  /**
   * Subscribes `subscriber` to `filter`. A second subscription with the same
   * filter replaces the first one's QoS and No Local [MQTT-3.8.4-3]. The protocol layer must
   * have validated the filter: an invalid one here is a bug. `noLocal`: messages this
   * subscriber publishes itself do not match this subscription [MQTT-3.8.3-3].
   */
  add(filter: string, subscriber: S, qos: Qos, noLocal = false): void {
    assert(validateTopicFilter(filter) === undefined, `SubscriptionIndex.add: invalid filter '${filter}'`);
    let node = this.root;
    for (const level of filter.split('/')) {
      let child = childOf(node, level);
      if (child === undefined) {
        child = createNode();
        this.trieNodeCount++;
        if (level === '+') node.plusChild = child;
        else if (level === '#') node.hashChild = child;
        else node.literalChildren.set(level, child);
      }
      node = child;
    }
    if (!node.subscribers.has(subscriber)) this.subscriptionCount++;
    node.subscribers.set(subscriber, qos);
    if (noLocal) (node.noLocal ??= new Set()).add(subscriber);
    else node.noLocal?.delete(subscriber);
    let filters = this.filtersBySubscriber.get(subscriber);
    if (filters === undefined) {
      filters = new Map();
      this.filtersBySubscriber.set(subscriber, filters);
    }
    filters.set(filter, qos);
  }

  /** Unsubscribes `subscriber` from exactly `filter`; false if it was not subscribed. */
  remove(filter: string, subscriber: S): boolean {
    const filters = this.filtersBySubscriber.get(subscriber);
    if (filters === undefined || !filters.has(filter)) return false;
    const levels = filter.split('/');
    const path: TrieNode<S>[] = [this.root];
    for (const level of levels) {
      const child = childOf(path[path.length - 1] ?? this.root, level);
      assert(child !== undefined, `SubscriptionIndex: reverse map holds '${filter}' but the trie does not`);
      path.push(child);
    }
    const leaf = path[path.length - 1];
    assert(leaf !== undefined && leaf.subscribers.delete(subscriber), `SubscriptionIndex: '${filter}' lost its subscriber`);
    leaf.noLocal?.delete(subscriber);
    this.subscriptionCount--;
    filters.delete(filter);
    if (filters.size === 0) this.filtersBySubscriber.delete(subscriber);
    this.prune(path, levels);
    return true;
  }

  /** Removes every subscription of `subscriber` (a session ending); returns how many. */
  removeAll(subscriber: S): number {
    const filters = this.filtersBySubscriber.get(subscriber);
    if (filters === undefined) return 0;
    // remove() edits the map being read, so iterate over a copy of its keys.
    const filterList = [...filters.keys()];
    for (const filter of filterList) this.remove(filter, subscriber);
    assert(!this.filtersBySubscriber.has(subscriber), 'SubscriptionIndex.removeAll left filters behind');
    return filterList.length;
  }

  /** A copy of the filters of `subscriber` with their QoS; empty if it has none. */
  filtersOf(subscriber: S): Map<string, Qos> {
    return new Map(this.filtersBySubscriber.get(subscriber));
  }

  /**
   * Every subscriber with a filter matching `topic`, once, with the maximum QoS of
   * its matching filters [MQTT-3.3.5-1]. `topic` must be a valid topic name.
   * `publisher`'s own No Local subscriptions do not match [MQTT-3.8.3-3].
   */
  match(topic: string, publisher?: S): ReadonlyMap<S, Qos> {
    // Made at the first subscriber found: a topic nobody listens to gets the shared empty map.
    let result: Map<S, Qos> | undefined;
    const levels = topicLevels(topic);
    // Wildcards in the first level do not match topics starting with '$' [MQTT-4.7.2-1].
    const dollarTopic = topic.startsWith('$');
    // The walk's stack as two arrays reused by every match (never re-entered): no object per node visited.
    // Its height is counted here, not kept as the arrays' length (setting a length runs in the runtime and drops
    // the backing store), so a walk that threw leaves nothing for the next; a popped slot is cleared.
    const nodes = walkNodes as (TrieNode<S> | undefined)[];
    const depths = walkDepths;
    nodes[0] = this.root;
    depths[0] = 0;
    let height = 1;
    while (height > 0) {
      height -= 1;
      const node = nodes[height] as TrieNode<S>;
      const depth = depths[height] as number;
      nodes[height] = undefined;
      const wildcardsAllowed = depth > 0 || !dollarTopic;
      // '#' matches the remaining levels, and also none: "sport/#" matches "sport".
      if (node.hashChild !== undefined && wildcardsAllowed) result = collect(result, node.hashChild, publisher);
      if (depth === levels.length) {
        result = collect(result, node, publisher);
        continue;
      }
      const literal = node.literalChildren.size === 0 ? undefined : node.literalChildren.get(levels[depth] as string);
      if (literal !== undefined) {
        nodes[height] = literal;
        depths[height] = depth + 1;
        height += 1;
      }
      if (node.plusChild !== undefined && wildcardsAllowed) {
        nodes[height] = node.plusChild;
        depths[height] = depth + 1;
        height += 1;
      }
    }
    return result ?? noSubscribers;
  }

  /** Walks back up `path` (root first) and detaches the nodes left empty. */
  private prune(path: TrieNode<S>[], levels: string[]): void {
    for (let index = levels.length; index > 0; index--) {
      const node = path[index];
      const parent = path[index - 1];
      const level = levels[index - 1];
      assert(node !== undefined && parent !== undefined && level !== undefined, 'SubscriptionIndex: bad prune path');
      if (!isEmptyNode(node)) return;
      detachChild(parent, level);
      this.trieNodeCount--;
    }
  }
}

function collect<S>(found: Map<S, Qos> | undefined, node: TrieNode<S>, publisher: S | undefined): Map<S, Qos> | undefined {
  if (node.subscribers.size === 0) return found;
  const result = found ?? new Map<S, Qos>();
  for (const [subscriber, qos] of node.subscribers) {
    if (subscriber === publisher && node.noLocal?.has(subscriber) === true) continue;
    const previous = result.get(subscriber);
    if (previous === undefined || qos > previous) result.set(subscriber, qos);
  }
  return result;
}

/** match()'s stack of nodes still to visit and their depths (reused: match is never re-entered); it grows to the deepest walk. */
const walkNodes: (TrieNode<unknown> | undefined)[] = [];
const walkDepths: number[] = [];
/** The levels of the last topic matched: a publisher's next PUBLISH usually has the same topic. */
let lastTopic: string | undefined;
let lastLevels: readonly string[] = [];

/**
 * A topic's levels. Not `topic.split('/')`: in V8 that looks up Symbol.split on the separator and
 * splits in the runtime, about 2,100 instructions for a two-level topic, most of a no-subscriber PUBLISH's routing.
 */
function topicLevels(topic: string): readonly string[] {
  if (topic === lastTopic) return lastLevels;
  const levels: string[] = [];
  let start = 0;
  for (let slash = topic.indexOf('/'); slash !== -1; slash = topic.indexOf('/', start)) {
    levels.push(topic.slice(start, slash));
    start = slash + 1;
  }
  levels.push(start === 0 ? topic : topic.slice(start));
  lastTopic = topic;
  lastLevels = levels;
  return levels;
}

/** What match() returns when nothing matches; never written to (the type says so). */
const noSubscribers: ReadonlyMap<never, Qos> = new Map<never, Qos>();
