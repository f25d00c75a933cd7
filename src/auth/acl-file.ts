/**
 * The ACL file on disk (`--acl FILE`): read at start-up, where a bad file
 * stops the broker with its line number, and re-read on SIGHUP, where a bad
 * file is logged and the rules already in force stay (a typo must not open
 * or close every topic of a running broker).
 *
 * Readers hold the AclSource, never a TopicAcl, so every check after a
 * reload sees the new rules at once.
 */
import { readFile } from 'node:fs/promises';
import { AclFileError, parseTopicAcl, type TopicAcl } from './topic-acl.js';

export interface AclSource {
  /** The rules in force now. */
  current(): TopicAcl;
}

export class AclFile implements AclSource {
  private constructor(
    readonly path: string,
    private rules: TopicAcl,
  ) {}

  static async load(path: string): Promise<AclFile> {
    return new AclFile(path, await readAcl(path));
  }

  current(): TopicAcl {
    return this.rules;
  }

  /** Re-read the file; on any problem keep the current rules and throw the AclFileError. */
  async reload(): Promise<void> {
    this.rules = await readAcl(this.path);
  }
}

async function readAcl(path: string): Promise<TopicAcl> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error: unknown) {
    const reason = error instanceof Error && 'code' in error ? String(error.code) : 'read failed';
    throw new AclFileError('acl-file-unreadable', `cannot read ACL file ${path}: ${reason}`);
  }
  return parseTopicAcl(text, path);
}
