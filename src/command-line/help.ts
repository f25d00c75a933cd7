/**
 * `--help` for a command, rendered from its CommandSpec: usage line, every
 * flag with its value name, help, default and environment twin, the notes
 * and the examples. The same table parses the flags, so help cannot drift.
 */
import { helpFlag, type CommandSpec, type FlagSpec } from './flags.js';

const nameColumnWidth = 28;

export function renderHelp(spec: CommandSpec): string {
  const lines = [`usage: cairn ${spec.name} [flags]`, '', spec.summary, '', 'flags:'];
  for (const flag of [...spec.flags, helpFlag]) lines.push(...flagLines(flag));
  for (const note of spec.notes ?? []) lines.push('', note);
  lines.push('', spec.examples.length > 1 ? 'examples:' : 'example:', ...spec.examples.map((example) => `  ${example}`));
  return `${lines.join('\n')}\n`;
}

function flagLines(flag: FlagSpec): string[] {
  const name = `--${flag.name}${flag.kind === 'value' ? ` ${flag.valueName ?? 'VALUE'}` : ''}`;
  const facts = [
    flag.required ? 'required' : undefined,
    flag.fallback !== undefined && flag.fallback !== '' ? `default ${flag.fallback}` : undefined,
    flag.env !== undefined ? `env ${flag.env}` : undefined,
  ].filter((fact) => fact !== undefined);
  const first = `  ${name.padEnd(nameColumnWidth)} ${flag.help}`;
  return facts.length === 0 ? [first] : [first, `  ${''.padEnd(nameColumnWidth)} (${facts.join('; ')})`];
}
