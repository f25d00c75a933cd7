/**
 * RabbitMQ-style AMQP permissions in the users file: parsed into three
 * regular expressions searched (not anchored) in resource names, refused with
 * a reason that names the user's entry and never echoes the password.
 */
import { describe, expect, it } from 'vitest';
import { parseAmqpPermissions, permissionResourceName } from '../../src/auth/amqp-permissions.js';
import { hashPassword, parseUsersFile } from '../../src/auth/users.js';

describe('AMQP permissions', () => {
  it('are searched in the name, as Erlang re:run does: ".*" everything, "^$" nothing, "lim-" anywhere', () => {
    const permissions = parseAmqpPermissions({ configure: '^$', write: '.*', read: 'lim-' });
    expect(typeof permissions).toBe('object');
    if (typeof permissions === 'string') return;
    expect(permissions.configure.test('q')).toBe(false);
    expect(permissions.write.test('anything')).toBe(true);
    expect(permissions.read.test('a-lim-b')).toBe(true);
    expect(permissions.read.test('other')).toBe(false);
  });

  it('name the default exchange amq.default', () => {
    expect(permissionResourceName('exchange', '')).toBe('amq.default');
    expect(permissionResourceName('queue', '')).toBe('');
  });

  it('refuse a bad expression, a missing one or an unknown key with the reason', () => {
    expect(parseAmqpPermissions({ configure: '(', write: '.*', read: '.*' })).toMatch(/'configure' is not a valid regular expression/);
    expect(parseAmqpPermissions({ configure: '.*', write: '.*' })).toMatch(/'read' must be a regular expression string/);
    expect(parseAmqpPermissions({ configure: '.*', write: '.*', read: '.*', admin: true })).toMatch(/unknown key\(s\) 'admin'/);
  });

  it('come from the users file ("amqp": {...}), and a user without them is unrestricted', async () => {
    const password = await hashPassword('pw');
    const users = parseUsersFile(JSON.stringify({ users: [
      { username: 'limited', password, amqp: { configure: '^lim-', write: '^lim-', read: '^lim-' } },
      { username: 'full', password },
    ] }), 'users.json');
    expect(users.amqpPermissions('limited')?.configure.source).toBe('^lim-');
    expect(users.amqpPermissions('full')).toBeUndefined();
    expect(await users.authenticate('amqp', 'limited', Buffer.from('pw'))).toBe('allowed');
    expect(() => parseUsersFile(JSON.stringify({ users: [{ username: 'x', password, amqp: { configure: '[', write: '', read: '' } }] }), 'users.json'))
      .toThrow(/users\[0\]\.amqp: 'configure' is not a valid regular expression/);
  });
});
