import type { InspectIo } from './progress.js';
export function inspectTrace(_args: readonly string[], _io: InspectIo): Promise<number> { return Promise.resolve(2); }
