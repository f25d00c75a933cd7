/**
 * Reference models for topic matching, written independently of the tries and
 * matchers under test (regular expressions), shared by the property tests.
 */

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** MQTT filter matching, including the rule that wildcards at the root never match `$` topics. */
export function referenceMatches(topic: string, filter: string): boolean {
  if (topic.startsWith('$') && /^[+#]/.test(filter)) return false;
  let source = '';
  filter.split('/').forEach((level, index) => {
    if (level === '#') source += index === 0 ? '[\\s\\S]*' : '(?:/[\\s\\S]*)?';
    else source += (index === 0 ? '' : '/') + (level === '+' ? '[^/]*' : escapeRegExp(level));
  });
  return new RegExp(`^${source}$`).test(topic);
}

/** Every key word is preceded by '.', so "" (zero words) and "." (two empty words) differ. */
export function referencePatternMatches(routingKey: string, pattern: string): boolean {
  const dottedKey = routingKey === '' ? '' : `.${routingKey}`;
  const patternWords = pattern === '' ? [] : pattern.split('.');
  const source = patternWords
    .map((word) => (word === '#' ? '(?:\\.[^.]*)*' : word === '*' ? '\\.[^.]*' : `\\.${escapeRegExp(word)}`))
    .join('');
  return new RegExp(`^${source}$`).test(dottedKey);
}
