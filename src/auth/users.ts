/**
 * Users and passwords, shared by the MQTT, AMQP and HTTP front ends.
 *
 * The users file is JSON, loaded once at start-up (`--users FILE`):
 *
 *   {
 *     "users": [
 *       { "username": "sensor-17", "password": "scrypt$<salt base64>$<hash base64>", "mqtt": true, "amqp": false },
 *       { "username": "ops",       "password": "scrypt$…$…" }
 *     ]
 *   }
 *
 * - `password` is only ever a scrypt hash (N=16384, r=8, p=1, 32-byte key,
 *   16-byte random salt), made by hashPassword() or `cairn passwd`
 *   (setUserPassword). A plain-text password in the file is refused at load.
 * - `mqtt`, `amqp`, `http` say which listeners the user may log in to; each
 *   defaults to true when absent, so `false` is how a user is kept out.
 * - `amqp` may also be RabbitMQ's permissions on the vhost '/', three regular
 *   expressions searched in exchange and queue names (amqp-permissions.ts):
 *     "amqp": { "configure": "^(sensor-.*)$", "write": "^amq\\.topic$", "read": ".*" }
 *   `true` is { ".*", ".*", ".*" }; "^$" grants nothing.
 * - No file, or a file with no users: anonymous access is allowed (the
 *   listeners are then open, as the reference broker's are).
 *
 * Invariants: passwords, hashes and the file's contents are never logged or
 * put in an error message; every comparison of secrets uses timingSafeEqual;
 * an unknown user name costs the same scrypt as a known one, so timing does
 * not reveal which names exist.
 */
import { createHmac, randomBytes, scrypt as scryptCallback, timingSafeEqual } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { parseAmqpPermissions, type AmqpPermissions } from './amqp-permissions.js';

export type Protocol = 'mqtt' | 'amqp' | 'http';

/**
 * allowed: go on. bad-credentials: unknown user or wrong password (MQTT
 * CONNACK 4). not-authorized: no credentials where they are required, or a
 * user without permission for this protocol (CONNACK 5). busy: too many
 * logins are being verified at once (CONNACK 3, server unavailable).
 */
export type AuthOutcome = 'allowed' | 'bad-credentials' | 'not-authorized' | 'busy';

export type UsersFileErrorCode = 'users-file-unreadable' | 'users-file-invalid';

export class UsersFileError extends Error {
  override readonly name = 'UsersFileError';
  constructor(
    readonly code: UsersFileErrorCode,
    message: string,
  ) {
    super(message);
  }
}

// scrypt costs ~16 MiB and tens of milliseconds on the libuv thread pool, which
// the log's fsyncs share: cap how many run at once and how many may wait.
const scryptCost = { N: 16_384, r: 8, p: 1 } as const;
const scryptKeyBytes = 32;
const scryptSaltBytes = 16;
const scryptConcurrentMax = 2;
const scryptWaitingMax = 256;
const usernameBytesMax = 65_535;

const hashPattern = /^scrypt\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;

interface UserEntry {
  readonly username: string;
  readonly salt: Buffer;
  readonly hash: Buffer;
  readonly permissions: Readonly<Record<Protocol, boolean>>;
  /** undefined: everything on the vhost (also when `amqp` is true). */
  readonly amqpPermissions: AmqpPermissions | undefined;
}

export interface Users {
  /** Number of configured users; 0 means anonymous access is allowed. */
  readonly size: number;
  /** Never throws for bad credentials; `password` is the raw bytes the client sent. */
  authenticate(protocol: Protocol, username: string | undefined, password: Uint8Array | undefined): Promise<AuthOutcome>;
  /**
   * For a user whose identity something else proved (a verified TLS client
   * certificate): no password, only whether the user exists and may use the protocol.
   */
  admit(protocol: Protocol, username: string): AuthOutcome;
  /** RabbitMQ-style permissions of a logged-in AMQP user; undefined: unrestricted (and always so without users). */
  amqpPermissions(username: string | undefined): AmqpPermissions | undefined;
}

/** Hash a password for the users file: `scrypt$<salt b64>$<hash b64>`. */
export async function hashPassword(plain: string | Uint8Array): Promise<string> {
  const salt = randomBytes(scryptSaltBytes);
  const hash = await scrypt(toBytes(plain), salt);
  return `scrypt$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/** Check a password against a stored `scrypt$…$…` string (false when the string is not one). */
export async function verifyPassword(plain: string | Uint8Array, stored: string): Promise<boolean> {
  const parsed = parseHash(stored);
  if (parsed === undefined) return false;
  const hash = await scrypt(toBytes(plain), parsed.salt);
  return hash.length === parsed.hash.length && timingSafeEqual(hash, parsed.hash);
}

/** No users configured: everyone may connect, with or without credentials. */
export const anonymousUsers: Users = {
  size: 0,
  authenticate: () => Promise.resolve('allowed'),
  admit: () => 'allowed',
  amqpPermissions: () => undefined,
};

/** Read and check the users file. A missing or malformed file is a UsersFileError naming the file (never its contents). */
export async function loadUsersFile(path: string): Promise<Users> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error: unknown) {
    const reason = error instanceof Error && 'code' in error ? String(error.code) : 'read failed';
    throw new UsersFileError('users-file-unreadable', `cannot read users file ${path}: ${reason}`);
  }
  return parseUsersFile(text, path);
}

export function parseUsersFile(text: string, source: string): Users {
  const entries = parseEntries(text, source);
  return entries.length === 0 ? anonymousUsers : new UserDirectory(entries);
}

/**
 * `cairn passwd`: add a user or replace one's password (and, when given, its
 * permissions) in a users file, creating the file when it does not exist. The
 * file is replaced atomically (temp file + rename) and is readable by its
 * owner only.
 */
export async function setUserPassword(options: {
  readonly file: string;
  readonly username: string;
  readonly password: string;
  readonly permissions?: Partial<Record<Protocol, boolean>>;
}): Promise<'created' | 'updated'> {
  if (options.username.length === 0) throw new UsersFileError('users-file-invalid', 'the user name must not be empty');
  if (options.password.length === 0) throw new UsersFileError('users-file-invalid', 'the password must not be empty');
  let document: { users: Array<Record<string, unknown>> } = { users: [] };
  try {
    const text = await readFile(options.file, 'utf8');
    parseEntries(text, options.file); // refuse to rewrite a file we could not load
    document = JSON.parse(text) as { users: Array<Record<string, unknown>> };
  } catch (error: unknown) {
    if (!(error instanceof Error && 'code' in error && error.code === 'ENOENT')) throw error;
  }
  const password = await hashPassword(options.password);
  const existing = document.users.find((user) => user['username'] === options.username);
  const entry = existing ?? { username: options.username };
  entry['password'] = password;
  for (const [protocol, allowed] of Object.entries(options.permissions ?? {})) entry[protocol] = allowed;
  if (existing === undefined) document.users.push(entry);
  const temporary = `${options.file}.tmp-${process.pid}`;
  await writeFile(temporary, `${JSON.stringify(document, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, options.file);
  return existing === undefined ? 'created' : 'updated';
}

// ─────────────────────────── internals ───────────────────────────

class UserDirectory implements Users {
  private readonly byName = new Map<string, UserEntry>();
  /**
   * After one successful scrypt, a keyed digest of the accepted password, so
   * a reconnect storm of the same clients does not queue thousands of scrypts.
   * The key lives only in this process; the digest is compared in constant time.
   */
  private readonly verified = new Map<string, Buffer>();
  private readonly cacheKey = randomBytes(32);
  private readonly dummy: UserEntry;
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(entries: readonly UserEntry[]) {
    for (const entry of entries) this.byName.set(entry.username, entry);
    const first = entries[0];
    this.dummy = { username: '', salt: first?.salt ?? randomBytes(scryptSaltBytes), hash: randomBytes(scryptKeyBytes), permissions: { mqtt: false, amqp: false, http: false }, amqpPermissions: undefined };
  }

  get size(): number {
    return this.byName.size;
  }

  async authenticate(protocol: Protocol, username: string | undefined, password: Uint8Array | undefined): Promise<AuthOutcome> {
    if (username === undefined) return 'not-authorized';
    const entry = this.byName.get(username);
    const candidate = password ?? new Uint8Array(0);
    const digest = createHmac('sha256', this.cacheKey).update(username).update('\u0000').update(candidate).digest();
    const remembered = entry === undefined ? undefined : this.verified.get(username);
    let passwordMatches: boolean;
    if (remembered !== undefined && timingSafeEqual(remembered, digest)) {
      passwordMatches = true;
    } else {
      if (this.running >= scryptConcurrentMax && this.waiting.length >= scryptWaitingMax) return 'busy';
      const target = entry ?? this.dummy;
      const hash = await this.limited(() => scrypt(candidate, target.salt));
      passwordMatches = entry !== undefined && password !== undefined && timingSafeEqual(hash, target.hash);
      if (passwordMatches) this.verified.set(username, digest);
    }
    if (!passwordMatches || entry === undefined) return 'bad-credentials';
    return entry.permissions[protocol] ? 'allowed' : 'not-authorized';
  }

  amqpPermissions(username: string | undefined): AmqpPermissions | undefined {
    return username === undefined ? undefined : this.byName.get(username)?.amqpPermissions;
  }

  admit(protocol: Protocol, username: string): AuthOutcome {
    return this.byName.get(username)?.permissions[protocol] === true ? 'allowed' : 'not-authorized';
  }

  private async limited<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= scryptConcurrentMax) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    this.running += 1;
    try {
      return await work();
    } finally {
      this.running -= 1;
      this.waiting.shift()?.();
    }
  }
}

function parseEntries(text: string, source: string): UserEntry[] {
  const invalid = (reason: string): UsersFileError => new UsersFileError('users-file-invalid', `users file ${source}: ${reason}`);
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw invalid('not valid JSON');
  }
  if (typeof document !== 'object' || document === null || !Array.isArray((document as { users?: unknown }).users)) {
    throw invalid('expected an object with a "users" array');
  }
  const users = (document as { users: unknown[] }).users;
  const seen = new Set<string>();
  return users.map((user, index) => {
    const where = `users[${index}]`;
    if (typeof user !== 'object' || user === null) throw invalid(`${where} is not an object`);
    const fields = user as Record<string, unknown>;
    const username = fields['username'];
    if (typeof username !== 'string' || username.length === 0 || Buffer.byteLength(username) > usernameBytesMax) {
      throw invalid(`${where}.username must be a non-empty string`);
    }
    if (seen.has(username)) throw invalid(`${where}: user name '${username}' appears twice`);
    seen.add(username);
    const password = typeof fields['password'] === 'string' ? parseHash(fields['password']) : undefined;
    // The reason never includes the value: it might be a plain-text password.
    if (password === undefined) throw invalid(`${where}.password for '${username}' must be a scrypt hash (scrypt$<salt>$<hash>; make one with cairn passwd)`);
    const permissions = { mqtt: true, amqp: true, http: true };
    let amqpPermissions: AmqpPermissions | undefined;
    for (const protocol of ['mqtt', 'amqp', 'http'] as const) {
      const value = fields[protocol];
      if (value === undefined) continue;
      if (protocol === 'amqp' && typeof value === 'object' && value !== null) {
        const parsed = parseAmqpPermissions(value as Record<string, unknown>);
        if (typeof parsed === 'string') throw invalid(`${where}.amqp: ${parsed}`);
        amqpPermissions = parsed;
        continue;
      }
      if (typeof value !== 'boolean') throw invalid(`${where}.${protocol} must be true or false${protocol === 'amqp' ? ' or {"configure","write","read"} regular expressions' : ''}`);
      permissions[protocol] = value;
    }
    return { username, salt: password.salt, hash: password.hash, permissions, amqpPermissions };
  });
}

function parseHash(stored: string): { salt: Buffer; hash: Buffer } | undefined {
  const match = hashPattern.exec(stored);
  if (match === null) return undefined;
  const salt = Buffer.from(match[1] ?? '', 'base64');
  const hash = Buffer.from(match[2] ?? '', 'base64');
  if (salt.length < 8 || hash.length !== scryptKeyBytes) return undefined;
  return { salt, hash };
}

function scrypt(password: Uint8Array, salt: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCallback(password, salt, scryptKeyBytes, scryptCost, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

function toBytes(plain: string | Uint8Array): Uint8Array {
  return typeof plain === 'string' ? Buffer.from(plain, 'utf8') : plain;
}
