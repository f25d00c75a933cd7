/**
 * `cairn passwd --users FILE --user NAME`: set a user's password, read from
 * stdin (so it never appears in a process listing or shell history), as a
 * scrypt hash in the users file.
 */
import { setUserPassword } from '../auth/users.js';
import { UsageError, valueOf, type CommandSpec, type ParsedCommand } from './flags.js';

export const passwdCommand: CommandSpec = {
  name: 'passwd',
  summary: "Sets a user's password in a users file (created if missing); the password is read from stdin.",
  flags: [
    { name: 'users', kind: 'value', valueName: 'FILE', required: true, help: 'the users file that cairn serve --users reads' },
    { name: 'user', kind: 'value', valueName: 'NAME', required: true, help: 'the user name' },
  ],
  examples: ['cairn passwd --users users.json --user sensor-17 < password.txt'],
};

export async function runPasswd(parsed: ParsedCommand, stdin: AsyncIterable<Buffer | string>, stderr: NodeJS.WritableStream): Promise<number> {
  const file = valueOf(parsed, 'users');
  const user = valueOf(parsed, 'user');
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  const password = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
  if (password === '') throw new UsageError('empty password on stdin');
  const outcome = await setUserPassword({ file, username: user, password });
  stderr.write(`user '${user}' ${outcome} in ${file}\n`);
  return 0;
}
