/**
 * The users file and password checks (src/auth/users.ts) that MQTT CONNECT
 * relies on: scrypt hashes only, outcomes for every kind of bad login, the
 * file format's refusals (which never echo a secret), and `cairn passwd`.
 */
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anonymousUsers, hashPassword, loadUsersFile, parseUsersFile, setUserPassword, UsersFileError, verifyPassword } from '../../src/auth/users.js';

let hash: string;
let directory: string;

beforeAll(async () => {
  hash = await hashPassword('correct horse');
  directory = await mkdtemp(join(tmpdir(), 'cairn-users-'));
});

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('hashPassword and verifyPassword', () => {
  it('stores scrypt$<salt>$<hash> with a fresh salt each time, and verifies it', async () => {
    expect(hash).toMatch(/^scrypt\$[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]+={0,2}$/);
    expect(await hashPassword('correct horse')).not.toBe(hash);
    expect(await verifyPassword('correct horse', hash)).toBe(true);
    expect(await verifyPassword('correct horsE', hash)).toBe(false);
    expect(await verifyPassword('correct horse', 'correct horse')).toBe(false);
  });
});

describe('parseUsersFile', () => {
  const parse = (document: unknown) => parseUsersFile(JSON.stringify(document), 'users.json');

  it('reads users and their permissions', async () => {
    const users = parse({ users: [{ username: 'a', password: hash }, { username: 'b', password: hash, mqtt: false, amqp: true }] });
    expect(users.size).toBe(2);
    expect(await users.authenticate('mqtt', 'a', Buffer.from('correct horse'))).toBe('allowed');
    expect(await users.authenticate('mqtt', 'b', Buffer.from('correct horse'))).toBe('not-authorized');
    expect(await users.authenticate('amqp', 'b', Buffer.from('correct horse'))).toBe('allowed');
  });

  it('allows anonymous access when there are no users', async () => {
    expect(parse({ users: [] })).toBe(anonymousUsers);
    expect(await anonymousUsers.authenticate('mqtt', undefined, undefined)).toBe('allowed');
  });

  it('refuses a plain-text password without repeating it', () => {
    const attempt = () => parse({ users: [{ username: 'a', password: 'hunter2' }] });
    expect(attempt).toThrow(UsersFileError);
    expect(attempt).toThrow(/scrypt hash/);
    try {
      attempt();
    } catch (error: unknown) {
      expect(String(error)).not.toContain('hunter2');
    }
  });

  it('refuses bad JSON, a missing users array, duplicates and non-boolean permissions', () => {
    expect(() => parseUsersFile('{', 'f')).toThrow(/not valid JSON/);
    expect(() => parse({ people: [] })).toThrow(/"users" array/);
    expect(() => parse({ users: [{ username: 'a', password: hash }, { username: 'a', password: hash }] })).toThrow(/twice/);
    expect(() => parse({ users: [{ username: 'a', password: hash, mqtt: 'yes' }] })).toThrow(/true or false/);
    expect(() => parse({ users: [{ username: '', password: hash }] })).toThrow(/username/);
  });
});

describe('authenticate', () => {
  const users = () => parseUsersFile(JSON.stringify({ users: [{ username: 'probe', password: hash }] }), 'f');

  it('gives bad-credentials for a wrong password, an unknown user and a missing password', async () => {
    const directory = users();
    expect(await directory.authenticate('mqtt', 'probe', Buffer.from('nope'))).toBe('bad-credentials');
    expect(await directory.authenticate('mqtt', 'nobody', Buffer.from('correct horse'))).toBe('bad-credentials');
    expect(await directory.authenticate('mqtt', 'probe', undefined)).toBe('bad-credentials');
  });

  it('gives not-authorized when credentials are required and none are sent', async () => {
    expect(await users().authenticate('mqtt', undefined, undefined)).toBe('not-authorized');
  });

  it('remembers an accepted password, so a reconnect costs no scrypt, and still refuses a wrong one', async () => {
    const directory = users();
    expect(await directory.authenticate('mqtt', 'probe', Buffer.from('correct horse'))).toBe('allowed');
    const started = performance.now();
    for (let index = 0; index < 20; index++) expect(await directory.authenticate('mqtt', 'probe', Buffer.from('correct horse'))).toBe('allowed');
    // Twenty scrypts would take far longer than this.
    expect(performance.now() - started).toBeLessThan(100);
    expect(await directory.authenticate('mqtt', 'probe', Buffer.from('correct horse!'))).toBe('bad-credentials');
  });
});

describe('setUserPassword (cairn passwd) and loadUsersFile', () => {
  it('creates the file (owner-only), adds and updates users, and the result loads', async () => {
    const file = join(directory, 'users.json');
    expect(await setUserPassword({ file, username: 'alice', password: 'one' })).toBe('created');
    expect(await setUserPassword({ file, username: 'bob', password: 'two', permissions: { mqtt: false } })).toBe('created');
    expect(await setUserPassword({ file, username: 'alice', password: 'three' })).toBe('updated');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const text = await readFile(file, 'utf8');
    expect(text).not.toContain('three');
    const users = await loadUsersFile(file);
    expect(users.size).toBe(2);
    expect(await users.authenticate('mqtt', 'alice', Buffer.from('three'))).toBe('allowed');
    expect(await users.authenticate('mqtt', 'alice', Buffer.from('one'))).toBe('bad-credentials');
    expect(await users.authenticate('mqtt', 'bob', Buffer.from('two'))).toBe('not-authorized');
  });

  it('refuses to rewrite a file it cannot load, and names a missing file', async () => {
    const file = join(directory, 'broken.json');
    await writeFile(file, '{"users": [{"username": "x", "password": "plain"}]}');
    await expect(setUserPassword({ file, username: 'y', password: 'z' })).rejects.toThrow(UsersFileError);
    await expect(loadUsersFile(join(directory, 'missing.json'))).rejects.toMatchObject({ code: 'users-file-unreadable' });
  });
});
