/** The running Cairn's version, from package.json (read once at start-up). */
import { readFileSync } from 'node:fs';

function readVersion(): string {
  for (const path of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'cairnmq' && pkg.version) return pkg.version;
    } catch {
      // not at this depth: src/ when run from sources, dist/src/ when built
    }
  }
  return '0.0.0';
}

export const version = readVersion();
