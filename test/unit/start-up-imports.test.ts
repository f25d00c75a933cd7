/**
 * `cairn serve` on the file log loads only what it runs: the packages of
 * features that are off by default (the NATS client for a JetStream log, ws
 * for WebSocket listeners, mingo for collection queries, yaml for --config)
 * are loaded when used, not by the static imports of start-up — together
 * they cost every restart ~0.3 s of CPU on this machine. The static import
 * graph of the serve command's modules is walked from the TypeScript sources.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const sourceRoot = resolve(import.meta.dirname, '../../src');
const lazyPackages = ['@nats-io/', 'ws', 'mingo', 'yaml'];

/** Static `import … from` / `export … from` specifiers of a module (not `import type`, not `import()`). */
function staticImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/^(import|export)\s+(type\s+)?[^'";]*?from\s+'([^']+)'|^import\s+'([^']+)'/gm)) {
    if (match[2] !== undefined) continue;
    found.push(match[3] ?? match[4]!);
  }
  return found;
}

/** Every package reached from `roots` by static imports, with one chain of modules leading to it. */
function packagesReached(roots: readonly string[]): Map<string, string[]> {
  const chainTo = new Map<string, string[]>(roots.map((root) => [root, [root]]));
  const queue = [...roots];
  const packages = new Map<string, string[]>();
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const specifier of staticImports(file)) {
      if (!specifier.startsWith('.')) {
        if (!packages.has(specifier)) packages.set(specifier, chainTo.get(file)!);
        continue;
      }
      const target = resolve(dirname(file), specifier.replace(/\.js$/, '.ts'));
      if (chainTo.has(target) || !existsSync(target)) continue;
      chainTo.set(target, [...chainTo.get(file)!, target]);
      queue.push(target);
    }
  }
  return packages;
}

describe('start-up imports', () => {
  it('the serve command and the server reach no package that only an optional feature uses', () => {
    const reached = packagesReached([join(sourceRoot, 'command-line/serve.ts'), join(sourceRoot, 'server.ts')]);
    // The walk works: it finds the packages start-up does need.
    expect([...reached.keys()]).toEqual(expect.arrayContaining(['pino', 'prom-client', 'mqtt-packet', 'xxhash-wasm']));
    const lazy = [...reached].filter(([name]) => lazyPackages.some((p) => name === p || name.startsWith(p.endsWith('/') ? p : `${p}/`)));
    expect(lazy.map(([name, chain]) => `${name} <- ${chain.map((file) => file.slice(sourceRoot.length + 1)).reverse().join(' <- ')}`)).toEqual([]);
  });
});
