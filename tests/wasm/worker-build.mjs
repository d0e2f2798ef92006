// tests/wasm/worker-build.mjs — the tutorial's worker sources (web/src/worker/) and the chapter
// models its jobs import (jobs.ts), compiled with the project's tsc into a temp folder (keeping
// web/src's layout; bundler-style relative imports ('./coalesce') get their '.js'), for the
// worker tests (worker.test.mjs, worker-coalesce.test.mjs).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
export const out = mkdtempSync(join(tmpdir(), 'qkscope-worker-'));
after(() => rmSync(out, { recursive: true, force: true }));
const srcs = ['worker/handler.ts', 'worker/coalesce.ts', 'worker/train-runs.ts', 'worker/char-models.ts', 'worker/jobs.ts', 'worker/client.ts'];
execFileSync(join(root, 'node_modules/.bin/tsc'), [
  '--outDir', out, '--rootDir', join(root, 'web/src'), '--module', 'esnext', '--target', 'es2022',
  '--ignoreConfig', '--moduleResolution', 'bundler', '--noCheck', '--skipLibCheck', '--verbatimModuleSyntax',
  ...srcs.map((f) => join(root, 'web/src', f)),
], { stdio: 'pipe' });
const jsFiles = (dir) => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? jsFiles(join(dir, e.name)) : e.name.endsWith('.js') ? [join(dir, e.name)] : []));
for (const f of jsFiles(out)) writeFileSync(f, readFileSync(f, 'utf8').replace(/from '(\.\.?\/[^']+?)(?<!\.js)'/g, "from '$1.js'"));
export const { handle, transferables } = await import(pathToFileURL(join(out, 'worker/handler.js')).href);
export const { JOB_NAMES } = await import(pathToFileURL(join(out, 'worker/jobs.js')).href);
export const { Coalescer, StaleRequestError } = await import(pathToFileURL(join(out, 'worker/coalesce.js')).href);

