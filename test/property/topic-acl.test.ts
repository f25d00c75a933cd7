/**
 * Properties of the ACL pieces: filterCoversFilter against an exhaustive
 * reference (every topic over the filters' own levels), the acl_file parser
 * against a renderer (any rendering of a rule set parses back to it, garbage
 * is refused with a line number, never a crash), and aclAllows against the
 * Mosquitto rules stated independently: deny wins, grants add, order does
 * not matter, and a granted subscription reads every topic it matches that
 * no deny rule names.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AclFileError, aclAllows, parseTopicAcl, type AclAccess, type AclClient, type AclRule, type TopicAcl } from '../../src/auth/topic-acl.js';
import { filterCoversFilter, topicMatchesFilter } from '../../src/core/topic-filter.js';
import { announceSeed, testSeed } from '../support/kit.js';
import { referenceMatches } from '../support/topic-references.js';

const runs = { seed: testSeed, numRuns: 400 } as const;
announceSeed('test/property/topic-acl');

const literalLevel = fc.constantFrom('', 'a', 'b', '$s');
const filterArbitrary = fc
  .tuple(fc.array(fc.oneof(literalLevel, fc.constant('+')), { minLength: 0, maxLength: 3 }), fc.boolean())
  .map(([levels, hash]) => (hash ? [...levels, '#'] : levels).join('/'))
  .filter((filter) => filter !== '');
const topicArbitrary = fc.array(fc.constantFrom('a', 'b', 'c', '$s', ''), { minLength: 1, maxLength: 4 }).map((levels) => levels.join('/')).filter((topic) => topic !== '');

/** Every topic of up to `depth` levels over `alphabet`. */
function allTopics(alphabet: readonly string[], depth: number): string[] {
  let layer = alphabet.map((level) => [level]);
  const topics: string[] = [];
  for (let length = 1; length <= depth; length++) {
    topics.push(...layer.map((levels) => levels.join('/')).filter((topic) => topic !== ''));
    layer = layer.flatMap((levels) => alphabet.map((level) => [...levels, level]));
  }
  return topics;
}

/** Covers, by brute force: no topic over the filters' own levels (plus fresh ones) that `inner` matches escapes `outer`. */
function referenceCovers(outer: string, inner: string): boolean {
  const literals = [...outer.split('/'), ...inner.split('/')].filter((level) => level !== '+' && level !== '#');
  const alphabet = [...new Set([...literals, 'z', '$z', ''])];
  const depth = Math.max(outer.split('/').length, inner.split('/').length) + 1;
  return allTopics(alphabet, depth).every((topic) => !referenceMatches(topic, inner) || referenceMatches(topic, outer));
}

describe('filterCoversFilter', () => {
  it('agrees with the brute-force reference (every topic the inner filter matches, the outer one matches) [MQTT-4.7.1-2] [MQTT-4.7.2-1]', () => {
    let covered = 0;
    fc.assert(fc.property(filterArbitrary, filterArbitrary, (outer, inner) => {
      const expected = referenceCovers(outer, inner);
      if (expected) covered++;
      expect(filterCoversFilter(outer, inner)).toBe(expected);
    }), runs);
    expect(covered).toBeGreaterThan(runs.numRuns / 20);
  });

  it('a topic used as the inner filter is covered exactly when it matches', () => {
    fc.assert(fc.property(filterArbitrary, topicArbitrary, (filter, topic) => {
      expect(filterCoversFilter(filter, topic)).toBe(topicMatchesFilter(topic, filter));
    }), runs);
  });
});

// ─────────────────────────── the parser ───────────────────────────

const accessArbitrary = fc.constantFrom<AclAccess>('read', 'write', 'readwrite', 'deny');
const ruleArbitrary = fc.record({ access: accessArbitrary, filter: fc.oneof(filterArbitrary, fc.constant('devices/%c/#'), fc.constant('users/%u/+')) });
const userNameArbitrary = fc.constantFrom('alice', 'bob', 'sensor-17', 'x y');
const aclShape = fc.record({
  anonymous: fc.array(ruleArbitrary, { maxLength: 4 }),
  users: fc.uniqueArray(fc.tuple(userNameArbitrary, fc.array(ruleArbitrary, { maxLength: 4 })), { maxLength: 3, selector: ([name]) => name }),
  patterns: fc.array(ruleArbitrary, { maxLength: 3 }),
});
type AclShape = { anonymous: Array<{ access: AclAccess; filter: string }>; users: Array<[string, Array<{ access: AclAccess; filter: string }>]>; patterns: Array<{ access: AclAccess; filter: string }> };

/** Render a rule set as an acl_file, with the liberties the format allows (comments, blank lines, spaces, CRLF, an implied readwrite). */
function render(shape: AclShape, noise: readonly number[]): string {
  let n = 0;
  const pick = (): number => noise[n++ % Math.max(1, noise.length)] ?? 0;
  const lines: string[] = [];
  const rule = (keyword: string, { access, filter }: { access: AclAccess; filter: string }): void => {
    if (pick() % 3 === 0) lines.push(pick() % 2 === 0 ? '# a comment' : '   ');
    const implied = access === 'readwrite' && !filter.includes(' ') && pick() % 2 === 0;
    const indent = pick() % 2 === 0 ? '' : '  ';
    lines.push(implied ? `${indent}${keyword} ${filter}` : `${indent}${keyword}  ${access} ${filter}${pick() % 2 === 0 ? ' ' : ''}`);
  };
  for (const r of shape.anonymous) rule('topic', r);
  // Patterns may stand anywhere: put them among the anonymous rules and the users'.
  shape.patterns.forEach((r) => rule('pattern', r));
  for (const [name, rules] of shape.users) {
    lines.push(`user ${name}`);
    for (const r of rules) rule('topic', r);
  }
  return lines.join(pick() % 2 === 0 ? '\n' : '\r\n');
}

function stripLines(rules: readonly AclRule[]): Array<{ access: AclAccess; filter: string }> {
  return rules.map(({ access, filter }) => ({ access, filter }));
}

describe('parseTopicAcl', () => {
  it('parses any rendering of a rule set back to that rule set', () => {
    fc.assert(fc.property(aclShape, fc.array(fc.nat(10), { minLength: 1, maxLength: 16 }), (shape, noise) => {
      const acl = parseTopicAcl(render(shape, noise), 'acl');
      expect(stripLines(acl.anonymous)).toEqual(shape.anonymous);
      expect(stripLines(acl.patterns)).toEqual(shape.patterns);
      expect([...acl.users.keys()].sort()).toEqual(shape.users.map(([name]) => name).sort());
      for (const [name, rules] of shape.users) expect(stripLines(acl.users.get(name)!)).toEqual(rules);
    }), runs);
  });

  it('refuses garbage with an AclFileError naming a line of the text, never another exception', () => {
    const word = fc.constantFrom('topic', 'pattern', 'user', 'read', 'deny', 'a/#', '#/a', 'a+', '+', '\n', ' ', '#', 'x');
    fc.assert(fc.property(fc.array(word, { maxLength: 12 }), (words) => {
      const text = words.join(' ');
      try {
        parseTopicAcl(text, 'garbage');
      } catch (error: unknown) {
        expect(error).toBeInstanceOf(AclFileError);
        const line = (error as AclFileError).line!;
        expect(line).toBeGreaterThanOrEqual(1);
        expect(line).toBeLessThanOrEqual(text.split('\n').length);
        expect((error as Error).message).toContain(`line ${line}`);
      }
    }), runs);
  });

  it('names the line of the first bad rule', () => {
    expect(() => parseTopicAcl('# ok\ntopic read a/#\n\nuser u\ntopic reed a b\n', 'f.acl')).toThrowError(/f\.acl line 5:/);
    expect(() => parseTopicAcl('topic read a/#/b\n', 'f.acl')).toThrowError(/line 1: 'a\/#\/b' is not a valid topic filter/);
    expect(() => parseTopicAcl('topics read a\n', 'f.acl')).toThrowError(/line 1: unknown keyword 'topics'/);
    expect(() => parseTopicAcl('user\n', 'f.acl')).toThrowError(/line 1: 'user' needs a user name/);
  });
});

// ─────────────────────────── evaluation ───────────────────────────

const clientArbitrary: fc.Arbitrary<AclClient> = fc.record({ username: fc.constantFrom(undefined, 'alice', 'bob'), clientId: fc.constantFrom('c1', 'dev+1', 'a') });
const actionArbitrary = fc.constantFrom('read' as const, 'write' as const);
const numbered = (rules: ReadonlyArray<{ access: AclAccess; filter: string }>): AclRule[] => rules.map((rule, index) => ({ ...rule, line: index + 1 }));
const aclArbitrary: fc.Arbitrary<TopicAcl> = aclShape.map((shape) => ({
  anonymous: numbered(shape.anonymous),
  users: new Map(shape.users.map(([name, rules]) => [name, numbered(rules)])),
  patterns: numbered(shape.patterns),
}));

/** The rules that speak for a client, substituted, written without the module's helpers. */
function referenceRules(acl: TopicAcl, client: AclClient): Array<{ access: AclAccess; filter: string }> {
  const own = client.username === undefined ? acl.anonymous : (acl.users.get(client.username) ?? []);
  const patterns = acl.patterns.flatMap(({ access, filter }) => {
    if (filter.includes('%u') && client.username === undefined) return [];
    if (/[+#]/.test(client.clientId) && filter.includes('%c')) return [];
    return [{ access, filter: filter.split('%c').join(client.clientId).split('%u').join(client.username ?? '') }];
  });
  return [...own, ...patterns];
}

describe('aclAllows', () => {
  it('read/write: allowed exactly when a grant for the action matches the topic and no deny does', () => {
    fc.assert(fc.property(aclArbitrary, clientArbitrary, actionArbitrary, topicArbitrary, (acl, client, action, topic) => {
      const rules = referenceRules(acl, client).filter(({ filter }) => referenceMatches(topic, filter));
      const denied = rules.some(({ access }) => access === 'deny');
      const granted = rules.some(({ access }) => access === 'readwrite' || access === action);
      expect(aclAllows(acl, client, action, topic)).toBe(granted && !denied);
    }), runs);
  });

  it('the order of rules does not matter', () => {
    fc.assert(fc.property(aclArbitrary, clientArbitrary, fc.constantFrom('read' as const, 'write' as const, 'subscribe' as const), filterArbitrary, (acl, client, action, subject) => {
      if (action !== 'subscribe' && /[+#]/.test(subject)) return;
      const reversed: TopicAcl = { anonymous: [...acl.anonymous].reverse(), users: new Map([...acl.users].map(([name, rules]) => [name, [...rules].reverse()])), patterns: [...acl.patterns].reverse() };
      expect(aclAllows(reversed, client, action, subject)).toBe(aclAllows(acl, client, action, subject));
    }), runs);
  });

  it('a granted subscription reads every topic it matches that no deny rule matches', () => {
    fc.assert(fc.property(aclArbitrary, clientArbitrary, filterArbitrary, topicArbitrary, (acl, client, filter, topic) => {
      if (!aclAllows(acl, client, 'subscribe', filter) || !referenceMatches(topic, filter)) return;
      const denied = referenceRules(acl, client).some(({ access, filter: ruleFilter }) => access === 'deny' && referenceMatches(topic, ruleFilter));
      expect(aclAllows(acl, client, 'read', topic)).toBe(!denied);
    }), runs);
  });

  it('a deny rule only ever takes access away, a grant only ever adds it', () => {
    fc.assert(fc.property(aclArbitrary, clientArbitrary, actionArbitrary, topicArbitrary, filterArbitrary, (acl, client, action, topic, filter) => {
      const before = aclAllows(acl, client, action, topic);
      const withRule = (access: AclAccess): TopicAcl => ({ ...acl, patterns: [...acl.patterns, { access, filter, line: 0 }] });
      if (!before) expect(aclAllows(withRule('deny'), client, action, topic)).toBe(false);
      if (before) expect(aclAllows(withRule('readwrite'), client, action, topic)).toBe(true);
    }), runs);
  });

  it("Mosquitto's documented cases", () => {
    const acl = parseTopicAcl([
      'topic read $SYS/#', 'topic read public/#', 'pattern write devices/%c/state', 'pattern readwrite home/%u/#',
      'user alice', 'topic readwrite #', 'topic deny secret/#', 'user bob', 'topic read sensors/+/temp',
    ].join('\n'), 'doc');
    const anonymous = { username: undefined, clientId: 'dev1' };
    const alice = { username: 'alice', clientId: 'a1' };
    const bob = { username: 'bob', clientId: 'b1' };
    expect(aclAllows(acl, anonymous, 'read', 'public/news')).toBe(true);
    expect(aclAllows(acl, anonymous, 'write', 'public/news')).toBe(false);
    expect(aclAllows(acl, anonymous, 'write', 'devices/dev1/state')).toBe(true);
    expect(aclAllows(acl, anonymous, 'write', 'devices/dev2/state')).toBe(false);
    expect(aclAllows(acl, anonymous, 'read', 'home/x/y')).toBe(false); // %u needs a user name
    expect(aclAllows(acl, bob, 'read', 'public/news')).toBe(false); // the anonymous section is not bob's
    expect(aclAllows(acl, alice, 'subscribe', '#')).toBe(true);
    expect(aclAllows(acl, alice, 'read', 'secret/plans')).toBe(false);
    expect(aclAllows(acl, alice, 'subscribe', 'secret/+')).toBe(false);
    expect(aclAllows(acl, bob, 'subscribe', 'sensors/+/temp')).toBe(true);
    expect(aclAllows(acl, bob, 'subscribe', 'sensors/#')).toBe(false);
    expect(aclAllows(acl, bob, 'read', 'home/bob/lamp')).toBe(true);
    expect(aclAllows(acl, { username: 'carol', clientId: 'c' }, 'read', 'sensors/1/temp')).toBe(false); // no section: patterns only
  });
});
