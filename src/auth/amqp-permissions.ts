/**
 * AMQP permissions as RabbitMQ has them on a vhost: three regular
 * expressions per user, searched (not anchored, as Erlang's re:run) in the
 * name of the exchange or queue an operation touches. `^$` matches no
 * resource at all; the default exchange is named `amq.default` for them.
 * Which operation needs which permission on what is RabbitMQ's table, kept
 * in protocols/amqp/permission-check.ts; this file only holds and parses them.
 */

export type AmqpPermission = 'configure' | 'write' | 'read';
export const amqpPermissionKinds: readonly AmqpPermission[] = ['configure', 'write', 'read'];

export type AmqpPermissions = Readonly<Record<AmqpPermission, RegExp>>;

/** Parse `{configure, write, read}` from the users file; a string is the reason it is refused. */
export function parseAmqpPermissions(fields: Record<string, unknown>): AmqpPermissions | string {
  const unknown = Object.keys(fields).filter((key) => !amqpPermissionKinds.includes(key as AmqpPermission));
  if (unknown.length > 0) return `unknown key(s) ${unknown.map((key) => `'${key}'`).join(', ')}: expected configure, write, read`;
  const compiled: Partial<Record<AmqpPermission, RegExp>> = {};
  for (const kind of amqpPermissionKinds) {
    const source = fields[kind];
    if (typeof source !== 'string') return `'${kind}' must be a regular expression string ('.*' for everything, '^$' for nothing)`;
    try {
      compiled[kind] = new RegExp(source, 'u');
    } catch (error: unknown) {
      return `'${kind}' is not a valid regular expression: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
  return compiled as AmqpPermissions;
}

/** The name permissions see: the default exchange '' is `amq.default`, as in RabbitMQ. */
export function permissionResourceName(kind: 'exchange' | 'queue', name: string): string {
  return kind === 'exchange' && name === '' ? 'amq.default' : name;
}
