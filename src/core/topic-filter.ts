/**
 * MQTT 3.1.1 topic names and topic filters: validation and the plain matcher.
 *
 * A topic is split into levels on '/'; empty levels are levels ("a//b" has three,
 * "/" has two). In a filter, '+' stands for exactly one level (which may be the
 * empty level) and '#' for the parent level and any number of levels below it, so
 * "sport/#" matches "sport" as well as "sport/tennis" [MQTT-4.7.1-2].
 *
 * topicMatchesFilter() is the obviously-correct reference matcher: it walks the
 * levels of one filter. Routing a PUBLISH to many subscriptions goes through
 * SubscriptionIndex (subscription-index.ts), which must agree with it.
 */

/** The length prefix of an MQTT UTF-8 string is two bytes [MQTT-1.5.3]. */
const topicBytesMax = 65_535;

const levelSeparator = '/';

/**
 * Returns undefined when `filter` may be used in SUBSCRIBE or UNSUBSCRIBE, and a
 * human-readable reason otherwise. The caller turns the reason into the wire
 * reaction (closing the connection for MQTT 3.1.1 [MQTT-4.8.0-1]).
 */
export function validateTopicFilter(filter: string): string | undefined {
  const stringProblem = validateMqttString(filter, 'topic filter');
  if (stringProblem !== undefined) return stringProblem;
  const levels = filter.split(levelSeparator);
  const lastIndex = levels.length - 1;
  for (let index = 0; index <= lastIndex; index++) {
    const level = levels[index] ?? '';
    if (level.includes('#')) {
      if (level !== '#') {
        return `'#' must occupy a whole level, found '${level}' [MQTT-4.7.1-2]`;
      }
      if (index !== lastIndex) {
        return "'#' must be the last level of a topic filter [MQTT-4.7.1-2]";
      }
    }
    if (level.includes('+') && level !== '+') {
      return `'+' must occupy a whole level, found '${level}' [MQTT-4.7.1-3]`;
    }
  }
  return undefined;
}

/**
 * Returns undefined when `topic` may be the topic name of a PUBLISH, and a
 * human-readable reason otherwise. Wildcards are forbidden in topic names
 * [MQTT-3.3.2-2] [MQTT-4.7.1-1].
 */
export function validateTopicName(topic: string): string | undefined {
  const stringProblem = validateMqttString(topic, 'topic name');
  if (stringProblem !== undefined) return stringProblem;
  if (topic.includes('+') || topic.includes('#')) {
    return "a topic name must not contain the wildcards '+' or '#' [MQTT-3.3.2-2]";
  }
  return undefined;
}

/**
 * Whether a published `topic` matches a subscription `filter`. Both must already
 * be valid (validateTopicName, validateTopicFilter); on invalid input the answer
 * is unspecified.
 */
export function topicMatchesFilter(topic: string, filter: string): boolean {
  // A filter that starts with a wildcard must not match a topic that starts with
  // '$', so "#" does not deliver "$SYS/uptime" [MQTT-4.7.2-1].
  if (topic.startsWith('$') && (filter.startsWith('+') || filter.startsWith('#'))) {
    return false;
  }
  const topicLevels = topic.split(levelSeparator);
  const filterLevels = filter.split(levelSeparator);
  for (let index = 0; index < filterLevels.length; index++) {
    const filterLevel = filterLevels[index];
    // '#' is always the last filter level and also matches its parent, so it
    // accepts whatever is left of the topic, including nothing [MQTT-4.7.1-2].
    if (filterLevel === '#') return true;
    const topicLevel = topicLevels[index];
    if (topicLevel === undefined) return false;
    if (filterLevel !== '+' && filterLevel !== topicLevel) return false;
  }
  return topicLevels.length === filterLevels.length;
}

/** The rules shared by topic names and topic filters. */
function validateMqttString(value: string, what: string): string | undefined {
  if (value.length === 0) {
    return `a ${what} must be at least one character long [MQTT-4.7.3-1]`;
  }
  if (value.includes('\u0000')) {
    return `a ${what} must not contain the null character U+0000 [MQTT-4.7.3-2]`;
  }
  // A lone surrogate cannot be encoded as UTF-8 at all, and the codec would send
  // U+FFFD instead, so the name on the wire would not be the one we checked.
  if (loneSurrogatePattern.test(value)) {
    return `a ${what} must be well-formed UTF-8, found a lone surrogate [MQTT-1.5.3-1]`;
  }
  // Each UTF-16 code unit becomes at most three UTF-8 bytes: skip the count for
  // the common short string.
  if (value.length * 3 > topicBytesMax && Buffer.byteLength(value, 'utf8') > topicBytesMax) {
    return `a ${what} must not be longer than ${topicBytesMax} bytes of UTF-8 [MQTT-4.7.3-3]`;
  }
  return undefined;
}

/** In a `u` regular expression, \p{Cs} only matches surrogates that are not paired. */
const loneSurrogatePattern = /\p{Cs}/u;

/**
 * Whether every topic that `inner` matches is also matched by `outer` (both
 * valid filters): an ACL rule `outer` then speaks for a subscription `inner`
 * as a whole. "#" covers "a/+" but "a/+" does not cover "#"; "a/#" covers "a"
 * (since '#' also matches its parent level); a first-level wildcard of
 * `outer` does not cover a `$` level of `inner` [MQTT-4.7.2-1]. Sound by
 * construction: the property test checks it against topicMatchesFilter.
 */
export function filterCoversFilter(outer: string, inner: string): boolean {
  const outerLevels = outer.split(levelSeparator);
  const innerLevels = inner.split(levelSeparator);
  for (let index = 0; index < outerLevels.length; index++) {
    const outerLevel = outerLevels[index]!;
    const innerLevel = innerLevels[index];
    const dollarLevel = index === 0 && innerLevel !== undefined && innerLevel.startsWith('$');
    if (outerLevel === '#') return !dollarLevel;
    if (innerLevel === undefined) return false;
    // Only '#' covers '#' — and so does '+/#' where the inner '#' cannot match its parent level:
    // at the first level (a topic has at least one level) or after one empty level ('/#' never
    // matches the topic '', which is not a valid topic name [MQTT-4.7.3-1]).
    if (innerLevel === '#') {
      const parentIsNoTopic = index === 0 || (index === 1 && innerLevels[0] === '');
      return parentIsNoTopic && outerLevel === '+' && outerLevels.length === index + 2 && outerLevels[index + 1] === '#';
    }
    if (outerLevel === '+') {
      if (dollarLevel) return false;
      continue;
    }
    if (innerLevel === '+' || innerLevel !== outerLevel) return false;
  }
  return innerLevels.length === outerLevels.length;
}
