// The wasm SIMD tile products (core/include/qkscope/cpu/wasm_gemm.hpp) and the tiled forward
// built on them, at shapes attention() cannot ask for: tiles of 1 x 1 and odd sizes, d = 1 and
// d not a multiple of 4, L_q != L_k, every remainder of the 4 x 8 register block, fully masked
// rows. The checks are C++ (tests/wasm/kernels/tiled_edges.cpp, compiled with the tiled
// module's flags by `npm run build:wasm`), against the double reference under the one
// tolerance rule; this runs the program and fails on any failed check.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const program = fileURLToPath(new URL('../../build/wasm/qkscope_wasm_kernel_tests.cjs', import.meta.url));

test('wasm SIMD tile products and tiled forward: edge shapes within the rule of the double reference', () => {
  assert.ok(existsSync(program), `${program} is missing: run npm run build:wasm`);
  const run = spawnSync(process.execPath, [program], { encoding: 'utf8', maxBuffer: 1 << 24 });
  const out = `${run.stdout}${run.stderr}`;
  assert.equal(run.status, 0, `kernel checks failed:\n${out.split('\n').slice(0, 20).join('\n')}`);
  const m = out.match(/(\d+) checks, 0 failures/);
  assert.ok(m && Number(m[1]) > 1000, `expected the summary line with > 1000 checks, got:\n${out.slice(-500)}`);
});
