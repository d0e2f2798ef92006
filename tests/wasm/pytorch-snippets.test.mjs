// tests/wasm/pytorch-snippets.test.mjs — the PyTorch code that chapter 10 shows
// (web/src/chapters/ch10-code/code/*.py) computes what the core computes. The core (this
// WebAssembly module) produces the inputs and the expected numbers; Debian's python3-torch
// runs the snippets on the same inputs (tests/wasm/pytorch/run_snippets.py) in float64 and
// float32, and the core's float32 results must meet the project's tolerance rule against
// the float64 snippets. Masks must match exactly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertMatchesReference, load, toRows } from './helpers.mjs';

const qk = await load();
const driver = fileURLToPath(new URL('./pytorch/run_snippets.py', import.meta.url));

/** Seeded inputs, multiples of 1/16 in [-2, 2): exact in fp16, fp32 and fp64. */
function lcg(seed) {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}
function matrix(rand, rows, cols) {
  return Array.from({ length: rows }, () => Array.from({ length: cols }, () => Math.floor(rand() * 64 - 32) / 16));
}
const enc = (x) => (Array.isArray(x) || ArrayBuffer.isView(x) ? Array.from(x, enc) : Number.isFinite(x) ? x : String(x).replace('Infinity', 'inf').replace('NaN', 'nan'));
const dec = (x) => (Array.isArray(x) ? x.map(dec) : typeof x === 'string' ? Number(x.replace('inf', 'Infinity')) : x);
const flat = (x) => dec(x).flat(Infinity);
const paramsOf = (p) => Object.fromEntries(Object.entries(p).map(([k, v]) => [k, v.rows !== undefined ? toRows(v) : Array.from(v)]));

function runPython(cases) {
  const dir = mkdtempSync(join(tmpdir(), 'qkscope-torch-'));
  try {
    const file = join(dir, 'cases.json');
    writeFileSync(file, JSON.stringify(cases));
    return JSON.parse(execFileSync('/usr/bin/python3', [driver, file], { encoding: 'utf8', maxBuffer: 1 << 26 }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Inputs and the core's answers.
const rand = lcg(2026);
const scoreCases = [];
const scoreExpected = [];
for (const f of qk.scoreFunctions) {
  for (const [Lq, Lk, dq, dk] of [[3, 5, 4, 4], [1, 7, 5, 5], [4, 2, 3, 6]]) {
    if (f.sameDim && dq !== dk) continue;
    const query = matrix(rand, Lq, dq), key = matrix(rand, Lk, dk), value = matrix(rand, Lk, 2);
    const r = qk.forward({ query, key, value, score: f.name, seed: 7, hidden: 3 });
    scoreCases.push({ score: f.name, query, key, params: paramsOf(r.params) });
    // The snippets return f(q, k); scaled_dot's f includes its 1/sqrt(d_k), which the core applies as its scale.
    scoreExpected.push(f.name === 'scaled_dot' ? r.scores.data : r.rawScores.data);
  }
}

const maskCases = [];
const maskExpected = [];
for (const opts of [
  { L_q: 4, L_k: 6, causal: true },
  { L_q: 6, L_k: 4, causal: true, alignment: 'bottom_right' }, // the first two queries see no key
  { L_q: 5, L_k: 5, window: [1, 0] },
  { L_q: 3, L_k: 6, window: [2, 1], alignment: 'bottom_right', keyLength: 5 },
  { L_q: 4, L_k: 4, causal: true, keyLength: 2 },
]) {
  const query = matrix(rand, opts.L_q, 3), key = matrix(rand, opts.L_k, 3);
  const r = qk.forward({
    query, key, value: key, score: 'dot', causal: !!opts.causal, causalAlignment: opts.alignment ?? 'top_left',
    ...(opts.window ? { window: { left: opts.window[0], right: opts.window[1] } } : {}),
    ...(opts.keyLength !== undefined ? { keyLength: opts.keyLength } : {}),
  });
  maskCases.push({ ...opts, scores: enc(toRows(r.scores)) });
  maskExpected.push({ keep: Array.from(r.maskedScores.data, Number.isFinite), masked: r.maskedScores.data });
}

const normCases = [];
const normExpected = [];
{
  // L_q > L_k with a bottom-right causal mask: row 0 has no visible key.
  const query = matrix(rand, 5, 4), key = matrix(rand, 4, 4);
  for (const normalizer of ['softmax', 'hard', 'sparsemax', 'topk_softmax']) {
    for (const temperature of [1, 0.5, 3]) {
      const r = qk.forward({ query, key, value: key, causal: true, causalAlignment: 'bottom_right', normalizer, temperature, topK: 2 });
      normCases.push({ normalizer, temperature, topK: 2, z: enc(toRows(r.maskedScores)) });
      normExpected.push(r.weights.data);
    }
  }
}

const lengths = [3, 5, 1];
const polX = [0, 1, 2].map(() => matrix(rand, 5, 4));
const polExpected = polX.map((x, b) => qk.forward({ query: x, key: x, value: x, keyLength: lengths[b] }));

const mq = matrix(rand, 3, 8), mk = matrix(rand, 4, 8), mv = matrix(rand, 4, 2);
const keep = [[true, true, false, true], [false, false, false, false], [true, false, false, false]];
const mixedExpected = qk.forward({ query: mq, key: mk, value: mv, mask: keep });
const overflow = [[1000, 999, 0], [1, 2, 3]];
const noMax = qk.precisionSoftmax({ scores: overflow, dtype: 'float32', method: 'no_max' });
const stable = qk.precisionSoftmax({ scores: overflow, dtype: 'float32', method: 'correct' });

const py = runPython({
  scores: scoreCases, masks: maskCases, normalizers: normCases,
  polarity: { lengths, L_k: 5, x: polX },
  mixed: { query: mq, key: mk, value: mv, keep, overflow },
});

test('every scoring function of the registry has a snippet that matches the core', () => {
  assert.ok(scoreCases.length >= qk.scoreFunctions.length);
  py.scores.forEach((r, n) => assertMatchesReference(scoreExpected[n], flat(r.naive), flat(r.ref), `${scoreCases[n].score} case ${n}`));
  // d_q != d_k runs for every function that allows it.
  for (const f of qk.scoreFunctions.filter((g) => !g.sameDim)) {
    assert.ok(scoreCases.some((c) => c.score === f.name && c.query[0].length !== c.key[0].length), f.name);
  }
});

test('the mask snippets give the core keep masks (True = may attend) and -inf logits', () => {
  py.masks.forEach((r, n) => {
    assert.deepEqual(flat(r.keep), maskExpected[n].keep, `keep mask, case ${JSON.stringify(maskCases[n])}`);
    assert.deepEqual(flat(r.masked), Array.from(maskExpected[n].masked), `masked logits, case ${n}`);
  });
  // Bottom-right with L_q > L_k leaves the first L_q - L_k rows empty, without any padding.
  assert.deepEqual(flat(py.masks[1].keep).slice(0, 8), Array(8).fill(false));
});

test('softmax, hard, sparsemax and top-k snippets match the core, empty rows included', () => {
  py.normalizers.forEach((r, n) => {
    const c = normCases[n];
    assertMatchesReference(normExpected[n], flat(r.naive), flat(r.ref), `${c.normalizer} tau ${c.temperature}`);
    assert.deepEqual(flat(r.ref).slice(0, 4), [0, 0, 0, 0], `${c.normalizer}: the empty row gives weights 0, not NaN`);
  });
});

test('mask polarity: key_padding_mask (True = ignore), SDPA and FlexAttention (True = attend), Hugging Face (1 = real) give the core weights', () => {
  const p = py.polarity;
  polExpected.forEach((r, b) => {
    const w = Array.from(r.weights.data);
    const near = (got, what) => flat(got).forEach((x, k) => assert.ok(Math.abs(x - w[k]) <= 1e-6, `${what} b=${b} [${k}]: ${x} vs core ${w[k]}`));
    near(p.mha[b], 'nn.MultiheadAttention');
    near(p.sdpa[b], 'SDPA mask');
    assert.deepEqual(p.hf[b], [0, 1, 2, 3, 4].map((j) => (j < lengths[b] ? 1 : 0)), 'attention_mask: 1 = real token');
    assert.deepEqual(flat(p.flex[b]), w.map((x, k) => k % 5 < lengths[b]), 'mask_mod: True = may attend');
    if (p.ran_sdpa) near(p.sdpa_output[b], 'SDPA output');
  });
});

test('fp32 scoring of fp16 inputs matches the core; naive softmax overflows where the core says it does', () => {
  const m = py.mixed;
  const w = Array.from(mixedExpected.weights.data);
  flat(m.weights).forEach((x, k) => assert.ok(Math.abs(x - w[k]) <= 1e-6, `weights[${k}]: ${x} vs ${w[k]}`));
  // The output is rounded to fp16 once: relative error at most 2^-11 (a half unit in the last place).
  const o = Array.from(mixedExpected.output.data);
  flat(m.output).forEach((x, k) => assert.ok(Math.abs(x - o[k]) <= 2 ** -11 * Math.abs(o[k]) + 1e-7, `output[${k}]: ${x} vs ${o[k]}`));
  assert.deepEqual(flat(m.output).slice(2, 4), [0, 0], 'fully masked row: output 0');
  const naive = flat(m.naive);
  assert.equal(naive.filter(Number.isNaN).length, noMax.nanCount, 'NaN count of the naive softmax');
  naive.forEach((x, k) => assert.ok(Number.isNaN(x) ? Number.isNaN(noMax.weights.data[k]) : Math.abs(x - noMax.weights.data[k]) <= 1e-6, `naive[${k}]`));
  flat(m.stable).forEach((x, k) => assert.ok(Math.abs(x - stable.weights.data[k]) <= 1e-6, `stable[${k}]`));
});
