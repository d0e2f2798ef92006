// tests/e2e/widget-size.test.mjs — size budget of the self-contained widget script:
// dist/widget/qk-scope.js (JS + Emscripten glue + the .wasm inlined) at most 120 KB
// gzipped (gzip -9, 1 KB = 1000 B), and the npm .wasm asset shipped next to its glue.
// Needs `npm run build:widget` first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { repoRoot } from './server.mjs';

const BUDGET = 120_000;

test('dist/widget/qk-scope.js is at most 120 KB gzipped', () => {
  const file = join(repoRoot, 'dist/widget/qk-scope.js');
  assert.ok(existsSync(file), 'dist/widget/qk-scope.js is missing: run `npm run build:widget` first');
  const raw = readFileSync(file);
  const gz = gzipSync(raw, { level: 9 }).length;
  console.log(`# qk-scope.js: ${raw.length} B raw, ${gz} B gzipped (budget ${BUDGET} B)`);
  assert.ok(gz <= BUDGET, `qk-scope.js is ${gz} B gzipped, over the ${BUDGET} B budget`);
});

test('the npm build ships the .wasm next to its glue, and no eval in either distribution', () => {
  for (const f of ['index.js', 'define.js', 'qkscope_widget.mjs', 'qkscope_widget.wasm'])
    assert.ok(existsSync(join(repoRoot, 'dist/widget/esm', f)), `dist/widget/esm/${f} is missing`);
  for (const f of ['dist/widget/qk-scope.js', 'dist/widget/esm/qkscope_widget.mjs']) {
    const js = readFileSync(join(repoRoot, f), 'utf8');
    assert.doesNotMatch(js, /new Function\(|\beval\(/, `${f} uses eval / new Function (blocked by strict CSP)`);
  }
});
