/**
 * MQTT topic access control lists in Mosquitto's `acl_file` format, parsed
 * and evaluated; pure (no I/O: acl-file.ts reads and reloads the file).
 *
 *   # a comment (a line whose first non-blank character is '#')
 *   topic read public/#              ← before any `user` line: clients without a user name
 *   user sensor-17                   ← the rules below are this user's (the CONNECT user name, not the client id)
 *   topic write sensors/17/#
 *   topic deny  sensors/17/secret
 *   pattern readwrite devices/%c/#   ← anywhere: every client, %c = client id, %u = user name
 *
 * `topic|pattern [read|write|readwrite|deny] FILTER`; without an access word
 * the access is readwrite (and then the filter must not contain a space).
 *
 * Evaluation, as Mosquitto does it: a client's rules are its user's section
 * (or the anonymous section when it sent no user name) plus every pattern
 * with %c/%u substituted. A `deny` rule that applies wins over any grant;
 * otherwise a matching grant allows; with no matching rule the answer is no.
 * - write (PUBLISH) and read (a delivery): the rule's filter matches the topic.
 * - subscribe (SUBSCRIBE): the rule's filter covers the whole requested filter
 *   (filterCoversFilter), so a grant of `a/#` allows subscribing to `a/+/b`, a
 *   subscription to `#` needs a grant of `#`, and a `deny a/#` refuses `a/+`
 *   but not `#` — whose deliveries from `a/…` are then refused one by one.
 * - A pattern naming %u does not apply to a client without a user name, and
 *   none applies when the substituted id or name holds a wildcard.
 */
import { filterCoversFilter, topicMatchesFilter, validateTopicFilter } from '../core/topic-filter.js';

export type AclAccess = 'read' | 'write' | 'readwrite' | 'deny';
export type AclAction = 'read' | 'write' | 'subscribe';

export interface AclRule {
  readonly access: AclAccess;
  readonly filter: string;
  /** 1-based line of the file, for messages. */
  readonly line: number;
}

export interface TopicAcl {
  /** Rules for clients that sent no user name. */
  readonly anonymous: readonly AclRule[];
  readonly users: ReadonlyMap<string, readonly AclRule[]>;
  /** Rules for every client, with %c and %u to substitute. */
  readonly patterns: readonly AclRule[];
}

export interface AclClient {
  readonly username: string | undefined;
  readonly clientId: string;
}

export class AclFileError extends Error {
  override readonly name = 'AclFileError';
  constructor(
    readonly code: 'acl-file-unreadable' | 'acl-file-invalid',
    message: string,
    /** The offending line, when one is to blame. */
    readonly line?: number,
  ) {
    super(message);
  }
}

/** More rules than this in one file is a mistake (or an attack on the evaluation cost). */
export const aclRulesMax = 100_000;

const accessWords: ReadonlySet<string> = new Set<AclAccess>(['read', 'write', 'readwrite', 'deny']);

/** Parse an ACL file's text; the first problem is an AclFileError naming `source` and the line. */
export function parseTopicAcl(text: string, source: string): TopicAcl {
  const anonymous: AclRule[] = [];
  const users = new Map<string, AclRule[]>();
  const patterns: AclRule[] = [];
  let section = anonymous;
  let rules = 0;
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const line = index + 1;
    const content = lines[index]!.trim();
    if (content === '' || content.startsWith('#')) continue;
    const fail = (reason: string): AclFileError => new AclFileError('acl-file-invalid', `ACL file ${source} line ${line}: ${reason}`, line);
    const [keyword, rest] = splitWord(content);
    if (keyword === 'user') {
      if (rest === '') throw fail("'user' needs a user name");
      section = users.get(rest) ?? [];
      users.set(rest, section);
      continue;
    }
    if (keyword !== 'topic' && keyword !== 'pattern') throw fail(`unknown keyword '${keyword.slice(0, 32)}' (expected topic, pattern or user)`);
    const rule = parseRule(rest, line, fail);
    if (++rules > aclRulesMax) throw fail(`more than ${aclRulesMax} rules (aclRulesMax)`);
    (keyword === 'pattern' ? patterns : section).push(rule);
  }
  return { anonymous, users, patterns };
}

function parseRule(text: string, line: number, fail: (reason: string) => AclFileError): AclRule {
  const [first, remainder] = splitWord(text);
  let access: AclAccess = 'readwrite';
  let filter = text;
  if (accessWords.has(first)) {
    access = first as AclAccess;
    filter = remainder;
  } else if (/\s/.test(text)) {
    throw fail(`'${text.slice(0, 64)}': a topic containing a space needs an access word (read, write, readwrite or deny) before it`);
  }
  if (filter === '') throw fail('a rule needs a topic filter');
  const problem = validateTopicFilter(filter);
  if (problem !== undefined) throw fail(`'${filter.slice(0, 64)}' is not a valid topic filter: ${problem}`);
  return { access, filter, line };
}

function splitWord(text: string): [string, string] {
  const match = /^(\S+)\s*(.*)$/.exec(text);
  return match === null ? ['', ''] : [match[1]!, match[2]!.trim()];
}

/** Whether `client` may do `action` on `subject` (a topic for read/write, a filter for subscribe). */
export function aclAllows(acl: TopicAcl, client: AclClient, action: AclAction, subject: string): boolean {
  const own = client.username === undefined ? acl.anonymous : (acl.users.get(client.username) ?? []);
  let granted = false;
  const consider = (access: AclAccess, filter: string): boolean => {
    const applies = action === 'subscribe' ? filterCoversFilter(filter, subject) : topicMatchesFilter(subject, filter);
    if (!applies) return false;
    if (access === 'deny') return true;
    if (access === 'readwrite' || access === (action === 'write' ? 'write' : 'read')) granted = true;
    return false;
  };
  for (const rule of own) {
    if (consider(rule.access, rule.filter)) return false;
  }
  for (const rule of acl.patterns) {
    const filter = substitute(rule.filter, client);
    if (filter !== undefined && consider(rule.access, filter)) return false;
  }
  return granted;
}

/** %c → client id, %u → user name; undefined when the pattern cannot apply to this client. */
export function substitute(filter: string, client: AclClient): string | undefined {
  if (!filter.includes('%')) return filter;
  if (filter.includes('%u') && client.username === undefined) return undefined;
  const unsafe = (value: string): boolean => value.includes('+') || value.includes('#');
  if (filter.includes('%c') && unsafe(client.clientId)) return undefined;
  if (filter.includes('%u') && unsafe(client.username!)) return undefined;
  // One pass, so a client id that itself contains '%u' is not substituted again.
  return filter.replace(/%[cu]/g, (placeholder) => (placeholder === '%c' ? client.clientId : client.username!));
}
