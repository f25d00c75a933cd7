/**
 * The `--config FILE` of `cairn serve`: YAML whose keys are the flags' long
 * names, read with `yaml` (eemeli/yaml, ISC, no dependencies).
 *
 * Why YAML and not TOML: every key the file holds must be checked against the
 * flags, and an unknown one is reported with its line. `yaml` keeps each
 * node's source range (with a LineCounter), so the line comes from the parser
 * itself; TOML parsers such as smol-toml return plain objects without
 * positions. `yaml` 2 reads YAML 1.2's core schema, so `no` stays a string.
 *
 *   # cairn.yaml
 *   data: /var/lib/cairn
 *   mqtt-port: 1883
 *   segment-bytes: 64MiB
 *   ingest: [ 'sensors/#:sensor_readings', 'fleet/+/pos:pings' ]   # a list is joined with ','
 *
 * A scalar becomes the text a flag would carry (`1883` → '1883'); a list of
 * scalars is joined with ','. Anything else (a nested map, an empty value,
 * an unknown or repeated key, a syntax error) is a UsageError naming the
 * file, the line and the key.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import type { LineCounter, Node as YamlNode } from 'yaml';
import { UsageError, type FileValue } from './flags.js';

let loadedYaml: typeof Yaml | undefined;
/** The yaml package, loaded by the first config file read (synchronously, through require): a start without --config never pays for it. */
function yaml(): typeof Yaml {
  loadedYaml ??= createRequire(import.meta.url)('yaml') as typeof Yaml;
  return loadedYaml;
}

export function readConfigFile(file: string, keys: readonly string[]): Map<string, FileValue> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error: unknown) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(`--config ${file}: cannot read it (${code === 'ENOENT' ? 'no such file' : code ?? String(error)})`);
  }
  return parseConfigText(file, text, keys);
}

export function parseConfigText(file: string, text: string, keys: readonly string[]): Map<string, FileValue> {
  const { isMap, isScalar, LineCounter, parseDocument } = yaml();
  const lines = new LineCounter();
  const document = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const syntaxError = document.errors[0];
  if (syntaxError !== undefined) {
    const line = syntaxError.linePos?.[0].line ?? lines.linePos(syntaxError.pos[0]).line;
    throw new UsageError(`${file}:${line}: not valid YAML: ${syntaxError.message.split('\n')[0]}`);
  }
  const values = new Map<string, FileValue>();
  const root = document.contents;
  if (root === null || (isScalar(root) && root.value === null)) return values;
  if (!isMap(root)) throw new UsageError(`${file}: the config file must be a map of flag names to values (like 'mqtt-port: 1883')`);
  const known = new Set(keys);
  for (const pair of root.items) {
    const keyNode = pair.key as YamlNode | null;
    const line = lineOf(lines, keyNode);
    const key = isScalar(keyNode) ? String(keyNode.value) : '';
    if (!known.has(key)) throw new UsageError(`${file}:${line}: unknown key '${key}' (the keys are the flags of cairn serve, without '--': see cairn serve --help)`);
    values.set(key, { value: valueText(file, line, key, pair.value as YamlNode | null), origin: `${file}:${line}` });
  }
  return values;
}

function valueText(file: string, line: number, key: string, node: YamlNode | null): string {
  const { isScalar, isSeq } = yaml();
  if (isScalar(node) && node.value !== null && typeof node.value !== 'object') return String(node.value);
  if (isSeq(node) && node.items.every((item) => isScalar(item) && item.value !== null && typeof item.value !== 'object')) {
    return node.items.map((item) => String((item as { value: unknown }).value)).join(',');
  }
  throw new UsageError(`${file}:${line}: '${key}' needs a value (a string, a number, true/false, or a list of them)`);
}

function lineOf(lines: LineCounter, node: YamlNode | null): number {
  const start = node?.range?.[0];
  return start === undefined ? 0 : lines.linePos(start).line;
}
