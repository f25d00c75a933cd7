/**
 * `cairn serve --print-config`: the effective configuration as a YAML file
 * that --config could read back, each line saying where its value came from
 * (flag, environment variable, config file line, or default). Flags left
 * unset are listed as comments, so the output is also a complete template.
 */
import type { ParsedCommand, ResolvedValue } from './flags.js';

const valueColumn = 32;

export function printConfig(parsed: ParsedCommand, fileKeys: readonly string[]): string {
  const lines = [`# cairn serve: effective configuration (flag > environment > config file > default)`];
  const configFile = parsed.values.get('config');
  if (configFile !== undefined) lines.push(`# config file: ${configFile.value} (${describeSource(configFile)})`);
  for (const name of fileKeys) {
    const resolved = parsed.values.get(name);
    if (resolved === undefined || resolved.value === '') {
      lines.push(`# ${name}:`.padEnd(valueColumn) + '   # unset');
      continue;
    }
    lines.push(`${name}: ${yamlScalar(resolved.value)}`.padEnd(valueColumn) + `   # ${describeSource(resolved)}`);
  }
  return `${lines.join('\n')}\n`;
}

function describeSource(resolved: ResolvedValue): string {
  switch (resolved.source) {
    case 'flag': return 'flag';
    case 'environment': return `environment ${resolved.origin ?? ''}`;
    case 'file': return `file ${resolved.origin ?? ''}`;
    case 'default': return 'default';
  }
}

/** Plain when YAML reads it back as the same text; otherwise a double-quoted (JSON) string. */
function yamlScalar(value: string): string {
  return /^[\w./@:+-]+$/.test(value) && !/^(true|false|null|~)$/i.test(value) && !value.includes(': ') ? value : JSON.stringify(value);
}
