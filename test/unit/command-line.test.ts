/**
 * Unit tests of the command-line parser (src/command-line) and the serve
 * configuration built on it: sizes and durations with units, a value flag that
 * never takes the next flag, precedence flag > environment > file > default,
 * and config-file errors that name the file, line and key.
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/command-line/config-file.js';
import { parseCommand, UsageError, type CommandSpec } from '../../src/command-line/flags.js';
import { parseDuration, parseSize } from '../../src/command-line/units.js';
import { parseServeArgs, readServeCommand, serveFileKeys } from '../../src/config.js';
import { tempDirectory } from '../support/kit.js';

function usageErrorOf(action: () => unknown): string {
  try {
    action();
  } catch (error: unknown) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as UsageError).message;
  }
  throw new Error('expected a UsageError');
}

describe('units', () => {
  it.each([
    ['4096', 4096], ['64MB', 64_000_000], ['64MiB', 64 * 2 ** 20], ['64M', 64 * 2 ** 20], ['1GiB', 2 ** 30], ['1GB', 1e9],
    ['512KiB', 512 * 1024], ['512kb', 512_000], ['1.5KiB', 1536], ['2 TiB', 2 * 2 ** 40], [' 10 ', 10],
  ])('size %s is %d bytes', (text, bytes) => {
    expect(parseSize(text)).toBe(bytes);
  });

  it.each(['', 'MB', '64XB', '64b', '-1', '1.5', '0x10', '64 M B'])('%j is not a size', (text) => {
    expect(parseSize(text)).toBeUndefined();
  });

  it.each([['500ms', 500], ['30s', 30_000], ['15m', 900_000], ['2h', 7_200_000], ['7d', 604_800_000], ['1w', 604_800_000], ['1.5h', 5_400_000]])(
    'duration %s is %d ms', (text, ms) => {
      expect(parseDuration(text)).toBe(ms);
    },
  );

  it.each(['30', 's', '2 hours', '-5s', '1y'])('%j is not a duration', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});

describe('the parser', () => {
  const spec: CommandSpec = {
    name: 'probe', summary: '', examples: [],
    flags: [
      { name: 'dir', kind: 'value', valueName: 'DIR', required: true, help: '' },
      { name: 'n', kind: 'value', valueName: 'N', fallback: '3', env: 'PROBE_N', help: '', check: (v) => (/^\d+$/.test(v) ? undefined : 'is not a number') },
      { name: 'json', kind: 'boolean', help: '' },
    ],
  };

  it('reads --name value, --name=value and booleans, with defaults and env twins', () => {
    const parsed = parseCommand(spec, ['--dir', 'a', '--json'], { PROBE_N: '7' });
    expect(Object.fromEntries([...parsed.values].map(([k, v]) => [k, [v.value, v.source]]))).toEqual({ dir: ['a', 'flag'], n: ['7', 'environment'], json: ['true', 'flag'] });
    expect(parseCommand(spec, ['--dir=--weird']).values.get('dir')?.value).toBe('--weird');
    expect(parseCommand(spec, ['--dir', 'a', '--dir', 'b']).values.get('dir')?.value).toBe('b');
  });

  it.each([
    [['--dir', '--json'], '--dir needs a value (DIR), but the next argument is the flag --json (write --dir=--json if that is the value)'],
    [['--dir'], '--dir needs a value (DIR)'],
    [['--json'], '--dir is required (see cairn probe --help)'],
    [['--dir', 'a', '--json=yes'], '--json takes no value'],
    [['--dir', 'a', '--colour'], 'unknown flag --colour (see cairn probe --help)'],
    [['--dir', 'a', '-x'], 'unknown flag -x (see cairn probe --help)'],
    [['--dir', 'a', 'extra'], "unexpected argument 'extra' (cairn probe takes only --flags; see --help)"],
    [['--dir', 'a', '--n', 'x'], "--n 'x' is not a number"],
    [['--dir', 'a', '--n', '-5'], "--n '-5' is not a number"],
  ])('%j is refused: %s', (args, message) => {
    expect(usageErrorOf(() => parseCommand(spec, args))).toBe(message);
  });

  it('names the environment variable when its value is bad', () => {
    expect(usageErrorOf(() => parseCommand(spec, ['--dir', 'a'], { PROBE_N: 'many' }))).toBe("PROBE_N (--n) 'many' is not a number");
  });

  it('--help and -h need no other flag, not even a required one', () => {
    expect(parseCommand(spec, ['--help']).help).toBe(true);
    expect(parseCommand(spec, ['--n', 'not-checked', '-h']).help).toBe(true);
    expect(parseCommand(spec, ['--dir', 'a']).help).toBe(false);
  });
});

describe('cairn serve configuration', () => {
  const temp = tempDirectory('cairn-config-');
  afterAll(() => temp.remove());
  const configFile = (name: string, text: string): string => {
    const path = join(temp.path, name);
    fs.writeFileSync(path, text);
    return path;
  };

  it('sizes and durations with units become bytes and milliseconds', () => {
    const config = parseServeArgs(['--segment-bytes', '64MB', '--retention-bytes', '1GiB', '--retention-age', '2h', '--mqtt-max-packet-bytes', '512KiB'], {});
    expect(config).toMatchObject({ segmentBytesMax: 64_000_000, retentionBytes: 2 ** 30, retentionMs: 7_200_000, mqttPacketBytesMax: 512 * 1024 });
    expect(parseServeArgs([], {}).segmentBytesMax).toBe(64 * 2 ** 20);
  });

  it('precedence: flag > environment > config file > default', () => {
    const file = configFile('precedence.yaml', 'mqtt-port: 1111\namqp-port: 2222\nhttp-port: 3333\n');
    const config = parseServeArgs(['--config', file, '--http-port', '5555'], { CAIRN_AMQP_PORT: '4444', CAIRN_HTTP_PORT: '6666' });
    expect([config.mqttPort, config.amqpPort, config.httpPort, config.bind]).toEqual([1111, 4444, 5555, '127.0.0.1']);
    const sources = readServeCommand(['--config', file, '--http-port', '5555'], { CAIRN_AMQP_PORT: '4444' }).values;
    expect(['mqtt-port', 'amqp-port', 'http-port', 'bind'].map((name) => [sources.get(name)?.source, sources.get(name)?.origin])).toEqual([
      ['file', `${file}:1`], ['environment', 'CAIRN_AMQP_PORT'], ['flag', undefined], ['default', undefined],
    ]);
    expect(parseServeArgs([], { CAIRN_CONFIG: file }).mqttPort).toBe(1111);
  });

  it('a list in the file is joined with commas (ingest routes)', () => {
    const file = configFile('ingest.yaml', "ingest:\n  - 'sensors/#:sensor_readings'\n  - fleet/+/pos:pings\n");
    expect(parseServeArgs(['--config', file], {}).ingestRoutes.map((route) => route.collection)).toEqual(['sensor_readings', 'pings']);
  });

  it.each([
    ['data: ./d\n\nmqtt-prot: 1883\n', "F:3: unknown key 'mqtt-prot' (the keys are the flags of cairn serve, without '--': see cairn serve --help)"],
    ['config: other.yaml\n', "F:1: unknown key 'config' (the keys are the flags of cairn serve, without '--': see cairn serve --help)"],
    ['data: [a, [b]]\n', "F:1: 'data' needs a value (a string, a number, true/false, or a list of them)"],
    ['data:\n', "F:1: 'data' needs a value (a string, a number, true/false, or a list of them)"],
    ['data: a\ndata: b\n', 'F:2: not valid YAML: Map keys must be unique'],
    ['- just\n- a list\n', "F: the config file must be a map of flag names to values (like 'mqtt-port: 1883')"],
  ])('file %j is refused', (text, message) => {
    expect(usageErrorOf(() => parseConfigText('F', text, serveFileKeys))).toBe(message);
  });

  it('a bad value in the file names the key and its line', () => {
    const file = configFile('bad-value.yaml', '# sizes\nsegment-bytes: lots\n');
    expect(usageErrorOf(() => parseServeArgs(['--config', file], {}))).toBe(`segment-bytes at ${file}:2 'lots' is not a size: give bytes or a number with a unit (4096, 512KiB, 64MB, 64MiB, 1GiB)`);
  });

  it('an unreadable config file is a usage error naming it', () => {
    expect(usageErrorOf(() => parseServeArgs(['--config', join(temp.path, 'missing.yaml')], {}))).toBe(`--config ${join(temp.path, 'missing.yaml')}: cannot read it (no such file)`);
  });
});
