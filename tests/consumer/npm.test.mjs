// tests/consumer/npm.test.mjs — the npm package as a user gets it. `npm pack` the repository
// (prepack checks the builds), install the tarball offline into a copy of tests/consumer/npm
// (a project outside this repository: no dependencies, so no registry is needed), type-check
// it (moduleResolution bundler, node16 and nodenext) and build it with Vite, then check the
// worked example (the tutorial's corrected table, to 4 decimals) in Node and in Chromium: the Vite app (element + typed core) and a plain page with
// the single script qkscope/widget/qk-scope.js.
// Needs `npm run build:wasm` and `npm run build:widget` first.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { launchChromium, serveFiles } from '../e2e/server.mjs';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const bin = (name) => join(repoRoot, 'node_modules/.bin', name);
const W1 = ['0.5065', '0.1863', '0.3072'];
const WEIGHTS = [W1, ['0.1863', '0.5065', '0.3072'], ['0.2741', '0.2741', '0.4519']];
const OUTPUT = ['0.8137', '0.4935', '0.5065', '0.1863', '0.4935', '0.8137', '0.1863', '0.5065', '0.7259', '0.7259', '0.2741', '0.2741'];
const fixed = (xs) => xs.map((x) => x.toFixed(4));

let tmp, app, packed, resolve, server, origin, browser;

before(async () => {
  for (const f of ['wasm/dist/qkscope_core.wasm', 'dist/widget/qk-scope.js'])
    if (!existsSync(join(repoRoot, f))) throw new Error(`${f} is missing: run npm run build:wasm and npm run build:widget first`);
  tmp = mkdtempSync(join(tmpdir(), 'qkscope-consumer-'));
  const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  [packed] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', tmp], repoRoot));
  app = join(tmp, 'app');
  cpSync(fileURLToPath(new URL('./npm/', import.meta.url)), app, { recursive: true });
  // --offline: the tarball must install from itself alone (no dependencies to fetch).
  run('npm', ['install', '--offline', '--no-audit', '--no-fund', join(tmp, packed.filename)], app);
  run(bin('tsc'), ['-p', join(app, 'tsconfig.json')], app);
  // The same sources under Node's own resolution (the .d.ts files need explicit extensions there).
  for (const mode of ['node16', 'nodenext'])
    run(bin('tsc'), ['-p', join(app, 'tsconfig.json'), '--module', mode, '--moduleResolution', mode], app);
  run(bin('vite'), ['build', app, '--logLevel', 'warn'], app);
  // Resolve as the consumer's own ES modules would (import conditions, exports map).
  writeFileSync(join(app, 'resolve.mjs'), 'export default (s) => import.meta.resolve(s);\n');
  const resolveUrl = (await import(pathToFileURL(join(app, 'resolve.mjs')).href)).default;
  resolve = (s) => fileURLToPath(resolveUrl(s));
  const script = resolve('qkscope/widget/qk-scope.js');
  server = await serveFiles((path) => (path === '/favicon.ico' ? { status: 204 }
    : path === '/plain.html' ? join(app, 'plain.html')
      : path === '/qk-scope.js' ? script
        : join(app, 'dist', path === '/' ? 'index.html' : path)));
  origin = server.origin;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test('the tarball: no dependencies, built files inside, every export resolves', () => {
  const pkg = JSON.parse(readFileSync(join(app, 'node_modules/qkscope/package.json'), 'utf8'));
  assert.equal(pkg.private, undefined, 'publishable');
  assert.deepEqual(pkg.dependencies ?? {}, {}, 'no runtime dependencies (installs offline)');
  const files = packed.files.map((f) => f.path);
  for (const f of ['wasm/qkscope.js', 'wasm/qkscope.d.ts', 'wasm/types/core.d.ts', 'wasm/dist/qkscope_core.wasm', 'wasm/dist/qkscope_tiled.mjs',
    'wasm/dist/qkscope_tiled.wasm', 'wasm/types/train.d.ts', 'wasm/dist/qkscope_train.mjs', 'wasm/dist/qkscope_train.wasm',
    'dist/widget/types/wasm/types/train.d.ts', 'dist/widget/qk-scope.js',
    'dist/widget/esm/define.js', 'dist/widget/esm/qkscope_widget.wasm', 'dist/widget/types/wasm/qkscope.d.ts'])
    assert.ok(files.includes(f), `${f} in the tarball`);
  assert.ok(!files.some((f) => /^(core|web|native|tests|scripts)\//.test(f)), 'no sources or tests in the tarball');
  for (const key of Object.keys(pkg.exports)) {
    const target = pkg.exports[key];
    for (const rel of typeof target === 'string' ? [target] : Object.values(target))
      assert.ok(existsSync(join(app, 'node_modules/qkscope', rel)), `exports["${key}"] -> ${rel} exists`);
  }
});

test('Node: the typed core from "qkscope" computes the worked example', async () => {
  const { loadQkScope } = await import(pathToFileURL(resolve('qkscope')).href);
  const wasmBinary = await readFile(resolve('qkscope/qkscope_core.wasm'));
  const qk = await loadQkScope({ wasmBinary });
  const X = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]];
  const r = qk.forward({ query: X, key: X, value: X, score: 'scaled_dot' });
  assert.deepEqual(fixed(Array.from(r.weights.data.subarray(0, 3))), W1);
  assert.deepEqual(fixed(Array.from(r.output.data)), OUTPUT);
  assert.equal(qk.version, JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')).version);
  assert.throws(() => qk.forward({ query: X, key: [[1, 2]], value: X }), RangeError);
  // The fast call loads the tiled module from the package's own files.
  const tiled = await qk.tiled({ wasmBinary: await readFile(resolve('qkscope/qkscope_tiled.wasm')) });
  const a = tiled.attention({ query: X, key: X, value: X });
  assert.equal(a.tiled, true);
  assert.deepEqual(fixed(Array.from(a.output.data)), OUTPUT);
});

/** Opens a page, returns the widget's weight grid rows and any console/page errors. */
async function openPage(path) {
  const page = await browser.newPage();
  const problems = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(`console.error: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('response', (r) => r.status() >= 400 && problems.push(`HTTP ${r.status()}: ${r.url()}`));
  await page.goto(origin + path);
  await page.waitForFunction(() => document.getElementById('worked')?.shadowRoot?.querySelector('[data-matrix=weights] [role=gridcell]'), null, { timeout: 20000 })
    .catch((e) => assert.fail(`${e.message}\n${problems.join('\n')}`));
  const rows = await page.evaluate(() => [...document.getElementById('worked').shadowRoot
    .querySelectorAll('[role=grid][data-matrix=weights] [role=row]')].map((r) => [...r.querySelectorAll('[role=gridcell]')].map((c) => c.textContent)));
  return { page, rows, problems };
}

test('Chromium: the Vite app (element from qkscope/widget/define, core from qkscope) shows the worked example', async () => {
  const { page, rows, problems } = await openPage('/');
  assert.deepEqual(rows, WEIGHTS);
  await page.waitForFunction(() => document.getElementById('core').dataset.ready === 'true', null, { timeout: 20000 });
  const core = JSON.parse(await page.textContent('#core'));
  assert.equal(core.element, true, 'the element class from qkscope/widget is the registered one');
  assert.deepEqual(core.weights.map(fixed), WEIGHTS);
  assert.deepEqual(fixed(core.output), OUTPUT);
  assert.deepEqual(fixed(core.attention), OUTPUT, 'attention() from the lazily loaded tiled module');
  assert.equal(core.tiled, true);
  assert.deepEqual(problems, []);
  await page.close();
});

test('Chromium: a plain page with the single script qkscope/widget/qk-scope.js shows the worked example', async () => {
  const { page, rows, problems } = await openPage('/plain.html');
  assert.deepEqual(rows, WEIGHTS);
  assert.deepEqual(problems, []);
  await page.close();
});
