// The training module (wasm/qkscope_train.wasm, createTrainer in wasm/types/train.d.ts):
// a short run lowers the loss, options are validated like the rest of the API, and with
// the same seed the wasm losses match the native driver's (qkscope_train, built by
// `npm run test:cpp` into build/native) within a stated tolerance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { load } from './helpers.mjs';

const trainWasmUrl = new URL('../../wasm/dist/qkscope_train.wasm', import.meta.url);
const nativeUrl = new URL('../../build/native/native/train/qkscope_train', import.meta.url);

const qk = await load();
const tr = await qk.train({ wasmBinary: await readFile(trainWasmUrl) });

test('the task registry matches TaskName in types/train.d.ts', () => {
  const dts = readFileSync(new URL('../../wasm/types/train.d.ts', import.meta.url), 'utf8');
  const declared = [...dts.match(/export type TaskName =([^;]+);/)[1].matchAll(/'([a-z_]+)'/g)].map((m) => m[1]);
  assert.deepEqual(tr.tasks.map((t) => t.name), declared);
  // Which task needs a text (the chapter offers only the others): 'text' alone.
  assert.deepEqual(tr.tasks.filter((t) => t.readsText).map((t) => t.name), ['text']);
  assert.ok(tr.tasks.every((t) => typeof t.readsText === 'boolean'));
});

test('a short reversal run lowers the loss and learns the anti-diagonal', () => {
  const t = tr.createTrainer({ task: 'reverse', score: 'scaled_dot', length: 8, width: 16, batch: 16, lr: 0.02, seed: 7 });
  try {
    const before = t.evaluate().loss;
    const losses = t.step(300);
    assert.equal(losses.length, 300);
    assert.ok(losses[299] < losses[0], `loss ${losses[0]} -> ${losses[299]}`);
    const e = t.evaluate();
    assert.ok(e.loss < before && e.tokenAccuracy >= 0.95, JSON.stringify(e));
    const s = t.state();
    assert.deepEqual([s.steps, s.diverged, s.vocab, s.length], [300, false, 11, 8]);
    const a = t.attention(0, 0, 0);
    assert.deepEqual([a.rows, a.cols], [8, 8]);
    for (let k = 0; k < 4; ++k) {  // answer row 4 + k looks at input 3 - k the most
      const row = Array.from(a.data.slice((4 + k) * 8, (5 + k) * 8));
      assert.equal(row.indexOf(Math.max(...row)), 3 - k, `row ${4 + k}: ${row}`);
    }
    const ex = t.example(0);
    assert.deepEqual(Array.from(ex.targets.slice(4)), Array.from(ex.tokens.slice(0, 4)).reverse());
  } finally {
    t.delete();
  }
});

test('bad options and arguments throw RangeErrors naming them; the module stays usable', () => {
  const bad = (opts, re) => assert.throws(() => tr.createTrainer(opts), (e) => e instanceof RangeError && re.test(e.message));
  bad({ task: 'sort' }, /unknown task 'sort' \(known: reverse, recall, copy, text\)/);
  bad({ lr: NaN }, /lr \(learning rate\) must be finite and > 0, got NaN/);
  bad({ lr: -1 }, /lr \(learning rate\) must be finite and > 0, got -1/);
  bad({ batch: 0 }, /batch/);
  bad({ task: 'recall', length: 2 }, /needs sequence length >= 3, got 2/);
  bad({ score: 'dott' }, /unknown scoring function 'dott'/);
  bad({ mask: 'upper' }, /mask must be 'none' or 'causal'/);
  bad({ learningRate: 0.1 }, /unknown option 'learningRate'/);
  // Bounded before allocation: this ran out of the WebAssembly heap after seconds of work.
  bad({ length: 4096 }, /batch \(32\) x heads \(1\) x layers \(1\) x length\^2 \(4096\^2\) attention weights must be at most 67108864/);
  const t = tr.createTrainer({ length: 6, width: 8, batch: 4, evalSize: 8 });
  try {
    assert.throws(() => t.step(0), (e) => e instanceof RangeError && /steps/.test(e.message));
    assert.throws(() => t.attention(8, 0, 0), (e) => e instanceof RangeError && /example must be in \[0, 8\), got 8/.test(e.message));
    assert.throws(() => t.attention(0, 1, 0), (e) => e instanceof RangeError && /layer/.test(e.message));
    assert.equal(t.step(2).length, 2);
  } finally {
    t.delete();
  }
});

test('a diverging run is stopped and reported', () => {
  const t = tr.createTrainer({ lr: 1e30, length: 6, width: 8, batch: 4 });
  try {
    const losses = t.step(20);
    const s = t.state();
    assert.ok(s.diverged && losses.length < 20 && losses.length === s.steps, JSON.stringify(s));
    assert.match(s.message, new RegExp(`training diverged at step ${losses.length + 1}`));
    assert.ok(Array.from(losses).every(Number.isFinite));
    assert.equal(t.step(5).length, 0);
  } finally {
    t.delete();
  }
});

// Same seed, same code: wasm (SIMD128) and native (SSE2) differ only in the order of float
// operations inside the GEMMs: measured 1e-7 relative over 30 steps of Adam (x86-64 GCC -O2 vs
// Emscripten 3.1.6 -O3 -msimd128); 1e-5 leaves room for other compilers, not for a different run.
const agreeSteps = 30, agreeTol = 1e-5;
test(`with the same seed the wasm losses match the native driver's (${agreeSteps} steps, relative ${agreeTol})`, () => {
  assert.ok(existsSync(nativeUrl), `${nativeUrl.pathname} missing: run \`npm run test:cpp\` first (it builds qkscope_train)`);
  for (const [score, extra] of [['scaled_dot', []], ['additive', ['--mask', 'causal', '--heads', '2']]]) {
    const dir = mkdtempSync(join(tmpdir(), 'qktrain-'));
    try {
      const out = join(dir, 'run.json');
      execFileSync(nativeUrl.pathname, ['--task', 'recall', '--score', score, '--steps', String(agreeSteps), '--seed', '5',
        '--len', '9', '--width', '16', '--batch', '8', '--eval-every', String(agreeSteps), '--json', out, ...extra],
      { stdio: ['ignore', 'ignore', 'inherit'] });
      const native = JSON.parse(readFileSync(out, 'utf8')).runs[0];
      const t = tr.createTrainer({ task: 'recall', score, seed: 5, length: 9, width: 16, batch: 8,
        ...(extra.length ? { mask: 'causal', heads: 2 } : {}) });
      try {
        const wasm = Array.from(t.step(agreeSteps));
        assert.equal(wasm.length, native.loss.length);
        const worst = Math.max(...wasm.map((l, i) => Math.abs(l - native.loss[i]) / Math.abs(native.loss[i])));
        console.log(`# ${score}: max relative loss difference wasm vs native ${worst.toExponential(2)}`);
        assert.ok(worst <= agreeTol, `${score}: ${worst}`);
        assert.ok(Math.abs(t.evaluate().loss - native.table.heldout_loss) <= agreeTol * native.table.heldout_loss);
      } finally {
        t.delete();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});
