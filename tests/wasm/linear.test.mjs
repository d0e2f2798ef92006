// linearAttention(), mergeStates() and sparsePattern(): the core's linear attention, merge of
// attention states and BigBird-style patterns through the JS API, with their errors.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { load, toRows } from './helpers.mjs';

let qk;
before(async () => {
  qk = await load();
});

/** Seeded (L, d) nested array with entries in [-s, s]. */
function mat(L, d, seed, s = 1) {
  let x = seed * 9301 + 49297;
  return Array.from({ length: L }, () => Array.from({ length: d }, () => {
    x = (x * 9301 + 49297) % 233280;
    return s * (2 * x / 233280 - 1);
  }));
}

const elu1 = (x) => (x > 0 ? x + 1 : Math.exp(x));

test('elu + 1: output and implied weights match the explicit pairwise formula, causal included', () => {
  const Q = mat(4, 3, 1), K = mat(6, 3, 2), V = mat(6, 2, 3);
  for (const causal of [false, true]) {
    const r = qk.linearAttention({ query: Q, key: K, value: V, featureMap: 'elu', causal, weights: true });
    const W = toRows(r.weights), O = toRows(r.output);
    for (let i = 0; i < 4; i++) {
      const sim = K.map((k, j) => (causal && j > i ? 0 : Q[i].reduce((a, q, c) => a + elu1(q) * elu1(k[c]), 0)));
      const tot = sim.reduce((a, b) => a + b, 0);
      for (let j = 0; j < 6; j++) assert.ok(Math.abs(W[i][j] - sim[j] / tot) < 1e-6, `w[${i}][${j}]`);
      for (let c = 0; c < 2; c++) {
        const o = sim.reduce((a, s, j) => a + (s / tot) * V[j][c], 0);
        assert.ok(Math.abs(O[i][c] - o) < 1e-5, `o[${i}][${c}] causal=${causal}`);
      }
    }
  }
});

test('FAVOR+: seeded, approaches softmax attention as m grows; bottom-right alignment; gradients', () => {
  const Q = mat(8, 4, 4, 0.6), K = mat(8, 4, 5, 0.6), V = mat(8, 3, 6);
  const exact = qk.forward({ query: Q, key: K, value: V }).output.data;
  const err = (m, seed) => {
    const o = qk.linearAttention({ query: Q, key: K, value: V, features: m, seed }).output.data;
    let num = 0, den = 0;
    for (let n = 0; n < o.length; n++) {
      num += (o[n] - exact[n]) ** 2;
      den += exact[n] ** 2;
    }
    return Math.sqrt(num / den);
  };
  const a = qk.linearAttention({ query: Q, key: K, value: V, seed: 3 }).output.data;
  assert.deepEqual(qk.linearAttention({ query: Q, key: K, value: V, seed: 3 }).output.data, a);
  assert.notDeepEqual(qk.linearAttention({ query: Q, key: K, value: V, seed: 4 }).output.data, a);
  let small = 0, large = 0;
  for (let s = 0; s < 8; s++) {
    small += err(8, s);
    large += err(2048, s);
  }
  assert.ok(large < small / 4, `mean error at m = 2048 (${large / 8}) well below m = 8 (${small / 8})`);
  const br = qk.linearAttention({ query: Q.slice(0, 2), key: K, value: V, causal: true, causalAlignment: 'bottom_right', weights: true });
  assert.deepEqual(Array.from(br.weights.data.slice(0, 8)).map((w) => w > 0), [true, true, true, true, true, true, true, false]);
  const G = mat(8, 3, 7);
  const g = qk.linearAttention({ query: Q, key: K, value: V, weights: true, gradOutput: G });
  const W = toRows(g.weights), dV = toRows(g.dValue);
  for (let j = 0; j < 8; j++)
    for (let c = 0; c < 3; c++) {
      const want = W.reduce((acc, row, i) => acc + row[j] * G[i][c], 0);  // dV = W^T G
      assert.ok(Math.abs(dV[j][c] - want) < 1e-5, `dValue[${j}][${c}]`);
    }
  assert.equal(g.dQuery.rows, 8);
  assert.equal(g.dKey.cols, 4);
});

test('linearAttention errors are RangeErrors naming the argument', () => {
  const Q = mat(2, 3, 1), K = mat(4, 3, 2), V = mat(4, 2, 3);
  const bad = (opts, re) => assert.throws(() => qk.linearAttention(opts), (e) => e instanceof RangeError && re.test(e.message), String(re));
  bad({ query: Q, key: K, value: V, features: 0 }, /features must be an integer \[1, 65536\], got 0/);
  bad({ query: Q, key: K, value: V, featureMap: 'relu' }, /featureMap must be 'elu' or 'favor'/);
  bad({ query: Q, key: mat(4, 2, 2), value: V }, /key must have the width d = 3/);
  bad({ query: Q, key: K, value: mat(3, 2, 3) }, /value must have L_k = 4/);
  bad({ query: Q, key: K, value: V, scale: -1 }, /scale must be finite and > 0/);
  bad({ query: Q, key: K, value: V, gradOutput: mat(2, 5, 1) }, /gradOutput must have shape \(2, 2\)/);
  bad({ query: Q, key: K, value: V, featurs: 8 }, /unknown option 'featurs'/);
  for (const featureMap of ['elu', 'favor']) bad({ query: Q, key: [], value: [], featureMap }, /key must be non-empty/);
});

test('linearAttention: features far below the others do not underflow the output to 0', () => {
  const near = (got, want, what) => assert.ok(Math.abs(got - want) <= 1e-5 * Math.abs(want), `${what}: ${got} vs ${want}`);
  // Causal FAVOR+: row 0 sees only key 0, so its output is that key's value whatever key 1 is.
  for (const k1 of [0, 5, 10])
    near(qk.linearAttention({ query: [[0], [0]], key: [[20], [k1]], value: [[7], [1]], causal: true, scale: 1, features: 64 })
      .output.data[0], 7, `k1 = ${k1}`);
  // One key: the output is its value.
  near(qk.linearAttention({ query: [[30]], key: [[-30]], value: [[7]], scale: 1 }).output.data[0], 7, 'one key');
  // elu + 1 with d = 1: phi(q) cancels, O = sum_j phi(k_j) v_j / sum_j phi(k_j), also where e^q underflows.
  const key = [[0.5], [-1], [2]], value = [[1], [2], [3]];
  const want = (1.5 + 2 * Math.exp(-1) + 9) / (4.5 + Math.exp(-1));
  for (const q of [-88, -100, -1000])
    near(qk.linearAttention({ query: [[q]], key, value, featureMap: 'elu' }).output.data[0], want, `q = ${q}`);
  near(qk.linearAttention({ query: [[1]], key: [[-100], [-120]], value: [[1], [2]], featureMap: 'elu' }).output.data[0],
    (1 + 2 * Math.exp(-20)) / (1 + Math.exp(-20)), 'keys -100, -120');
});

test('linearAttention: elu rejects the FAVOR+-only options, naming the option', () => {
  const Q = mat(2, 3, 1), K = mat(4, 3, 2), V = mat(4, 2, 3);
  for (const [k, v] of [['features', 16], ['seed', 3], ['scale', 0.5], ['orthogonal', false]])
    assert.throws(() => qk.linearAttention({ query: Q, key: K, value: V, featureMap: 'elu', [k]: v }),
      (e) => e instanceof RangeError && new RegExp(`${k} applies only to featureMap 'favor'`).test(e.message), k);
});

test('linearAttention: finite inputs that overflow float32 throw a RangeError naming the input, never NaN', () => {
  const bad = (opts, re) => assert.throws(() => qk.linearAttention(opts), (e) => e instanceof RangeError && re.test(e.message), String(re));
  const value = [[1], [2]], gradOutput = [[1]];
  // elu + 1 of 1e20: phi(q) . phi(k) = 2e40 would overflow float32; the ratio (about 1) does not.
  for (const causal of [false, true]) {
    const r = qk.linearAttention({ query: [[1e20, 1e20]], key: [[1e20, 1e20], [1, 1]], value, gradOutput, featureMap: 'elu', causal });
    assert.ok(Math.abs(r.output.data[0] - 1) < 1e-6);
    for (const g of [r.dQuery, r.dKey, r.dValue]) assert.ok(g.data.every(Number.isFinite));
  }
  bad({ query: [[1e30, 1e30]], key: [[1e30, 1e30], [1, 1]], value, features: 16 }, /query row 0 overflows the FAVOR\+ feature map/);
  bad({ query: [[1, 1]], key: [[1e30, 1e30], [1, 1]], value, features: 16 }, /key row 0 overflows the FAVOR\+ feature map/);
  bad({ query: [[1, 1]], key: [[1, 1], [1, 1]], value: [[3e38], [3e38]], featureMap: 'elu' }, /value: the key-value state/);
  // 1e37 is representable: equal values average to themselves and the gradients stay finite.
  const r = qk.linearAttention({ query: [[1, 1]], key: [[1, 1], [1, 1]], value: [[1e37], [1e37]], featureMap: 'elu', gradOutput });
  assert.ok(Math.abs(r.output.data[0] / 1e37 - 1) < 1e-6);
  for (const g of [r.dQuery, r.dKey, r.dValue]) assert.ok(g.data.every(Number.isFinite));
});

test('mergeStates: keys split at every position merge back to the one-pass result', async () => {
  const Q = mat(3, 4, 8, 1.5), K = mat(5, 4, 9, 1.5), V = mat(5, 2, 10);
  const keepCols = (lo, hi) => Q.map(() => K.map((_, j) => j >= lo && j < hi));
  const run = (lo, hi) => qk.forward({ query: Q, key: K, value: V, causal: true, mask: keepCols(lo, hi) });
  const whole = run(0, 5);
  for (let s = 0; s <= 5; s++) {
    const a = run(0, s), b = run(s, 5);
    const m = qk.mergeStates({ output: a.output, logsumexp: a.logsumexp }, { output: b.output, logsumexp: b.logsumexp });
    for (let n = 0; n < whole.output.data.length; n++)
      assert.ok(Math.abs(m.output.data[n] - whole.output.data[n]) < 1e-6, `split ${s}, entry ${n}`);
    for (let i = 0; i < 3; i++) assert.ok(Math.abs(m.logsumexp[i] - whole.logsumexp[i]) < 1e-5);
    if (s === 0 || s === 5) assert.deepEqual(m.output.data, whole.output.data, 'an empty part is the identity, bit for bit');
  }
  // The result objects of forward() and attention() are states as they are.
  const tiled = await qk.attention({ query: Q, key: K, value: V, causal: true, mask: keepCols(2, 5) });
  const mf = qk.mergeStates(run(0, 2), tiled);
  for (let n = 0; n < whole.output.data.length; n++) assert.ok(Math.abs(mf.output.data[n] - whole.output.data[n]) < 1e-6);
  const empty = { output: [[0, 0]], logsumexp: [-Infinity] };
  const e = qk.mergeStates(empty, empty);
  assert.deepEqual(Array.from(e.output.data), [0, 0]);
  assert.equal(e.logsumexp[0], -Infinity);
});

test('mergeStates errors name the state and field', () => {
  const s = { output: [[1, 2], [3, 4]], logsumexp: [0, 0] };
  const bad = (a, b, re) => assert.throws(() => qk.mergeStates(a, b), (e) => e instanceof RangeError && re.test(e.message), String(re));
  bad(s, { output: [[1, 2, 3], [4, 5, 6]], logsumexp: [0, 0] }, /b\.output \(shape of a\.output\) must have shape \(2, 2\), got \(2, 3\)/);
  bad(s, { output: s.output, logsumexp: [0] }, /b\.logsumexp must have L_q = 2 entries/);
  bad({ output: s.output, logsumexp: [0, Infinity] }, s, /a\.logsumexp must be finite or -Infinity, got Infinity at 1/);
  bad({ output: s.output, logsumexp: [0, 'x'] }, s, /a\.logsumexp\[1\] must be a number/);
  bad(s, { output: s.output }, /b\.logsumexp is required/);
  bad({ output: s.output, logsumexp: [1e39, 0] }, s, /a\.logsumexp\[0\] = 1e\+39 overflows float32/);
  bad(s, { output: s.output, logsumexp: [0, -1e39] }, /b\.logsumexp\[1\] = -1e\+39 overflows float32/);
  bad(s, { ...s, logsumexpp: [0, 0] }, /b: unknown option 'logsumexpp'/);
  bad(s, 3, /b must be an object \{output, logsumexp\}/);
});

test('sparsePattern: window + global as Longformer defines it, seeded BigBird random keys, errors', () => {
  const L = 10;
  const p = qk.sparsePattern({ queries: L, window: 1, global: 1 });
  for (let i = 0; i < L; i++)
    for (let j = 0; j < L; j++) assert.equal(p.data[i * L + j], Math.abs(i - j) <= 1 || i < 1 || j < 1 ? 1 : 0);
  const r = qk.sparsePattern({ queries: L, window: 1, global: 1, random: 2, seed: 4 });
  for (let i = 1; i < L; i++) {
    let extra = 0;
    for (let j = 0; j < L; j++) extra += r.data[i * L + j] - p.data[i * L + j];
    assert.equal(extra, 2, `row ${i}: two random keys`);
  }
  assert.deepEqual(qk.sparsePattern({ queries: L, window: 1, global: 1, random: 2, seed: 4 }).data, r.data);
  const out = qk.forward({ query: mat(L, 3, 1), key: mat(L, 3, 2), value: mat(L, 2, 3), mask: r });
  assert.ok(Array.from(out.output.data).every(Number.isFinite));
  assert.throws(() => qk.sparsePattern({ queries: 4, window: -1 }), (e) => e instanceof RangeError && /window/.test(e.message));
  assert.throws(() => qk.sparsePattern({ queries: 4, random: 1.5 }), (e) => e instanceof RangeError && /random/.test(e.message));
});

test('sparsePattern, bottom-right: the last queries (KV-cache decoding) get the bottom rows of the square pattern', () => {
  // The window, the global tokens and the random keys all follow query i's position i + o:
  // one decoding query at position 9 with global = 2 is not itself global.
  const L = 10;
  const opts = { window: 1, global: 2, random: 2, seed: 6, causalAlignment: 'bottom_right' };
  const full = toRows(qk.sparsePattern({ queries: L, ...opts }));
  for (const n of [1, 3]) assert.deepEqual(toRows(qk.sparsePattern({ queries: n, keys: L, ...opts })), full.slice(L - n), `last ${n}`);
  const plain = toRows(qk.sparsePattern({ queries: 1, keys: L, window: 1, global: 2, causalAlignment: 'bottom_right' }));
  assert.deepEqual(plain[0], [1, 1, 0, 0, 0, 0, 0, 0, 1, 1]);
});

test('linearAttention: a FAVOR+ scale outside float32 is a RangeError naming the scale, not equal features', () => {
  const Q = mat(3, 4, 1), K = mat(5, 4, 2), V = mat(5, 2, 3);
  for (const scale of [1e-300, 1e40])
    assert.throws(() => qk.linearAttention({ query: Q, key: K, value: V, scale }),
      (e) => e instanceof RangeError && /favor: scale .* is not representable/.test(e.message), String(scale));
});
