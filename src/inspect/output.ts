/**
 * Writing lines with back-pressure: a scan over a million records must not
 * buffer its whole output in memory when stdout is a slow pipe.
 */
import { once } from 'node:events';

export async function writeLine(stream: NodeJS.WritableStream, line: string): Promise<void> {
  if (!stream.write(`${line}\n`)) await once(stream, 'drain');
}

export function writeLines(stream: NodeJS.WritableStream, lines: readonly string[]): Promise<void> {
  return writeLine(stream, lines.join('\n'));
}
