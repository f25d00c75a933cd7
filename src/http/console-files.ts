/**
 * The web console's files (src/http/console: HTML, CSS, one ES module), read
 * once when the HTTP server starts and served from memory. No build step:
 * `npm run build` copies the folder beside the compiled server
 * (tools/copy-plain-files.mjs), and the tests run it from src/ as it is.
 * Only these names are served, so no path can reach another file.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';

const contentTypes: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

export interface ConsoleFile {
  readonly contentType: string;
  readonly body: string;
}

export function loadConsoleFiles(): ReadonlyMap<string, ConsoleFile> {
  const directory = fileURLToPath(new URL('./console/', import.meta.url));
  const files = new Map<string, ConsoleFile>();
  for (const name of readdirSync(directory)) {
    const contentType = contentTypes[extname(name)];
    if (contentType !== undefined) files.set(name, { contentType, body: readFileSync(`${directory}${name}`, 'utf8') });
  }
  if (!files.has('index.html')) throw new Error(`the web console is missing: no index.html in ${directory} (npm run build copies it)`);
  return files;
}
