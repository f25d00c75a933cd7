/**
 * AMQP 0-9-1 topic exchange matching of one routing key against one binding
 * pattern: the reference that TopicBindingIndex (binding-index.ts) must agree with.
 *
 * Words are split on '.'. In a pattern, a word that is exactly '*' matches one
 * word and a word that is exactly '#' matches zero or more words; '#' may appear
 * anywhere, several times. Any other word, "a*" included, matches only itself.
 *
 * Splitting follows RabbitMQ (rabbit_db_topic_exchange:split_topic_key/1), which
 * AMQP clients are written against:
 * - the empty string is ZERO words, so "#" matches the routing key "" and "*"
 *   does not, and the pattern "" matches only the key "";
 * - otherwise every '.' separates two words and empty words are words: "a..b" is
 *   three words, "a." is two ("a" and ""), "." is two empty words.
 */

/** Splits a routing key or a binding pattern into words, the RabbitMQ way. */
function splitTopicWords(value: string): string[] {
  return value === '' ? [] : value.split('.');
}

/**
 * Whether `routingKey` matches the binding `pattern`.
 *
 * A naive backtracking matcher is exponential in the number of '#' ("#.#.#.#.x"
 * against a long key), so this walks the pattern once while keeping the set of
 * key positions reachable so far: O(pattern words × key words) time and
 * O(key words) space whatever the input.
 */
export function topicPatternMatches(routingKey: string, pattern: string): boolean {
  return wordsMatch(splitTopicWords(routingKey), splitTopicWords(pattern));
}

function wordsMatch(keyWords: readonly string[], patternWords: readonly string[]): boolean {
  const keyLength = keyWords.length;
  // reachable[j] is 1 when the pattern words seen so far can consume exactly the
  // first j key words.
  let reachable = new Uint8Array(keyLength + 1);
  let next = new Uint8Array(keyLength + 1);
  reachable[0] = 1;
  let lowest = 0; // the lowest reachable position, or keyLength + 1 when none is
  for (const patternWord of patternWords) {
    next.fill(0);
    let nextLowest = keyLength + 1;
    if (patternWord === '#') {
      // Zero or more words: every position at or after the lowest reachable one.
      next.fill(1, lowest);
      nextLowest = lowest;
    } else {
      for (let position = lowest; position < keyLength; position++) {
        if (reachable[position] !== 1) continue;
        if (patternWord === '*' || patternWord === keyWords[position]) {
          next[position + 1] = 1;
          if (nextLowest > keyLength) nextLowest = position + 1;
        }
      }
    }
    if (nextLowest > keyLength) return false;
    [reachable, next] = [next, reachable];
    lowest = nextLowest;
  }
  return reachable[keyLength] === 1;
}
