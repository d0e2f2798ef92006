// tests/e2e/bench-web.test.mjs — smoke test of `npm run bench:web` (scripts/bench-web.mjs):
// one tiny shape, causal and not, two timed calls: the JSON has the documented fields, the
// runtimes (qkscope tiled wasm, onnxruntime-web on two graphs, tfjs-backend-wasm) agreed within the
// stated tolerance, and every time is a positive number. Native column off (not built in tests).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './server.mjs';

test('bench:web runs a tiny shape and writes agreeing, positive timings', { timeout: 60000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'qkscope-bench-web-test-'));
  try {
    const json = join(dir, 'web.json');
    const r = spawnSync(process.execPath, ['scripts/bench-web.mjs', '--len', '48', '--causal', '0,1', '--repeats', '2', '--warmup', '1', '--no-native', '--json', json],
      { cwd: repoRoot, encoding: 'utf8', timeout: 55000 });
    assert.equal(r.status, 0, `bench:web failed:\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /\| L \| causal \| qkscope ms \| onnxruntime-web ms \| tfjs-wasm ms \| native ms/);
    assert.match(r.stdout, /Chromium \d+\./);
    assert.match(r.stderr, /native column skipped/);
    const j = JSON.parse(readFileSync(json, 'utf8'));
    assert.equal(j.schema, 'qkscope-bench-web');
    assert.equal(j.version, 1);
    assert.equal(j.threads, 1);
    assert.ok(j.cpu.length > 0 && j.cores >= 1 && /^\d+\./.test(j.chromium));
    assert.equal(j.versions.tfjsBackend, 'wasm');
    assert.equal(j.versions.tfjsSimd, true);
    assert.equal(j.native, null);
    assert.deepEqual(j.rows.map((x) => [x.L, x.causal]), [[48, false], [48, true]]);
    for (const row of j.rows) {
      assert.ok(['mha', 'msm'].includes(row.ort_graph));
      assert.equal(row.ort_graph_failed, undefined, 'both ONNX graphs load in onnxruntime-web');
      // A bound independent of the script's: 1e-5 is ~20x the float32 rounding seen at these sizes.
      assert.ok(row.tolerance <= 1e-5 * (1 + row.max_abs_output) + 1e-12, `tolerance ${row.tolerance}`);
      const sides = ['qkscope', 'ort_mha', 'ort_msm', 'tfjs'];
      assert.deepEqual(Object.keys(row.samples_ms).sort(), [...sides].sort());
      assert.equal(Object.keys(row.max_abs_diff).length, 6, 'every pair of the four compared');
      for (const [pair, diff] of Object.entries(row.max_abs_diff)) assert.ok(diff <= row.tolerance, `${pair}: ${diff} > ${row.tolerance}`);
      for (const side of sides) {
        assert.equal(row.samples_ms[side].length, 2);
        assert.ok(row.median_ms[side] >= 0 && row.fastest_ms[side] <= row.median_ms[side], side);
      }
      assert.equal(row.ort_ms, Math.min(row.median_ms.ort_mha, row.median_ms.ort_msm), 'the peer at its faster graph');
      assert.equal(row.qkscope_ms, row.median_ms.qkscope);
      assert.equal(row.tfjs_ms, row.median_ms.tfjs);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bench:web fails loudly, before timing, when the outputs disagree beyond the tolerance', { timeout: 60000 }, () => {
  // Zero tolerance: three float32 implementations never agree to the last bit at L = 48.
  const r = spawnSync(process.execPath, ['scripts/bench-web.mjs', '--len', '48', '--causal', '0', '--repeats', '1', '--no-native', '--atol', '0', '--rtol', '0', '--json', join(tmpdir(), 'qkscope-never-written.json')],
    { cwd: repoRoot, encoding: 'utf8', timeout: 55000 });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /L=48 causal=false: outputs disagree beyond 0\.00e\+0: .*qkscope:/);
  assert.doesNotMatch(r.stdout, /\| L \| causal/, 'no table printed');
});
