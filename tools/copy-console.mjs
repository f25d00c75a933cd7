// Part of `npm run build`: the web console is plain files, copied beside the compiled HTTP server.
import { cpSync } from 'node:fs';

cpSync(new URL('../src/http/console/', import.meta.url), new URL('../dist/src/http/console/', import.meta.url), { recursive: true });
