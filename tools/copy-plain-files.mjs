// Part of `npm run build`: the files under src/ that are not TypeScript, copied to the same place under dist/ beside
// the compiled modules that load them: the web console (plain files the HTTP server serves) and the HTTP listener's
// socket thread (a worker's entry, which Node loads itself: src/http/socket-thread.js says why it is JavaScript) and
// the module it imports.
import { cpSync } from 'node:fs';

const plainFiles = ['src/http/console/', 'src/http/socket-thread.js', 'src/http/kept-answers.js'];

for (const path of plainFiles) cpSync(new URL(`../${path}`, import.meta.url), new URL(`../dist/${path}`, import.meta.url), { recursive: true });
