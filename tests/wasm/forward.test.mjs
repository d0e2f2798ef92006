// forward(): the worked example, every scoring function and normalizer from the
// registry, masks, biases, scale and temperature, input forms, copy semantics.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import {
  X,
  assertClose,
  assertFinite,
  assertRowStochastic,
  load,
  randomMatrix,
  toRows,
} from './helpers.mjs';

let qk;
before(async () => {
  qk = await load();
});
// The registry's names, known before the tests are declared: one test per scoring function.
const scoreNames = (await load()).scoreFunctions.map((s) => s.name);

const base = () => ({ query: X, key: X, value: X });

describe('worked example (X = Q = K = V, scaled_dot)', () => {
  test('weights and output to 4 decimals', () => {
    const r = qk.forward({ ...base(), score: 'scaled_dot' });
    assert.equal(r.scale, 0.5, 'scale = 1/sqrt(d_k) = 1/2');
    assert.deepEqual(toRows(r.rawScores), [
      [2, 0, 1],
      [0, 2, 1],
      [1, 1, 2],
    ]);
    assertClose(toRows(r.weights), [
      [0.5065, 0.1863, 0.3072],
      [0.1863, 0.5065, 0.3072],
      [0.2741, 0.2741, 0.4519],
    ], 5e-5, 'weights');
    assert.equal(r.output.rows, 3);
    assert.equal(r.output.cols, 4);
    assertClose(toRows(r.output), [
      [0.8137, 0.4935, 0.5065, 0.1863],
      [0.4935, 0.8137, 0.1863, 0.5065],
      [0.7259, 0.7259, 0.2741, 0.2741],
    ], 5e-5, 'output');
  });

  test('token 1 attends most to itself', () => {
    const w = toRows(qk.forward(base()).weights)[0];
    assert.equal(w.indexOf(Math.max(...w)), 0);
  });

  test('defaults are scaled_dot and softmax; diagnostics are consistent', () => {
    const r = qk.forward(base());
    const e = qk.forward({ ...base(), score: 'scaled_dot', normalizer: 'softmax', temperature: 1 });
    assert.deepEqual(r.weights, e.weights);
    assert.deepEqual(toRows(r.scores), toRows(r.maskedScores), 'nothing masked');
    for (let i = 0; i < 3; i++) {
      const z = toRows(r.scores)[i];
      const lse = Math.log(z.reduce((s, x) => s + Math.exp(x), 0));
      assertClose(r.logsumexp[i], lse, 1e-5, `logsumexp[${i}]`);
      const p = toRows(r.weights)[i];
      assertClose(r.entropy[i], -p.reduce((s, x) => s + x * Math.log(x), 0), 1e-5, `entropy[${i}]`);
      assertClose(r.maxWeight[i], Math.max(...p), 0, `maxWeight[${i}]`);
    }
    assert.ok(r.logsumexp instanceof Float32Array);
    assert.ok(r.weights.data instanceof Float32Array);
  });

  test('Matrix form, Float32Array rows and Float64Array data give the same result as nested arrays', () => {
    const nested = qk.forward(base());
    const flat = { rows: 3, cols: 4, data: Float32Array.from(X.flat()) };
    const f64 = { rows: 3, cols: 4, data: Float64Array.from(X.flat()) };
    const typedRows = X.map((r) => Float32Array.from(r));
    const plainData = { rows: 3, cols: 4, data: X.flat() };
    for (const m of [flat, f64, typedRows, plainData]) {
      assert.deepEqual(qk.forward({ query: m, key: m, value: m }).weights, nested.weights);
    }
  });
});

describe('scoring functions (iterating the registry)', () => {
  test('the registry lists the seven functions in tutorial order, params as arrays', () => {
    assert.deepEqual(qk.scoreFunctions.map((s) => s.name),
      ['dot', 'scaled_dot', 'cosine', 'bilinear', 'additive', 'linear_concat', 'neg_sq_euclidean']);
    const byName = Object.fromEntries(qk.scoreFunctions.map((s) => [s.name, s]));
    assert.deepEqual(byName.additive.params, ['W_q', 'W_k', 'v', 'b']);
    assert.deepEqual(byName.bilinear.params, ['W']);
    assert.deepEqual(byName.linear_concat.params, ['w']);
    assert.deepEqual(byName.dot.params, []);
    assert.equal(byName.dot.sameDim, true);
    assert.equal(byName.bilinear.sameDim, false);
    assert.deepEqual(byName.neg_sq_euclidean.params, []);
    assert.equal(byName.neg_sq_euclidean.sameDim, true);
    assert.equal(byName.neg_sq_euclidean.label, 'Negative squared Euclidean distance');
    for (const s of qk.scoreFunctions) {
      assert.equal(typeof s.label, 'string');
      assert.ok(s.tex.length > 0);
    }
  });

  for (const name of scoreNames) {
    test(`${name}: finite weights, rows sum to 1, params reported`, () => {
      const info = qk.scoreFunctions.find((s) => s.name === name);
      assert.ok(info, `${name} is registered`);
      const Q = randomMatrix(5, 4, 1), K = randomMatrix(6, 4, 2), V = randomMatrix(6, 3, 3);
      const r = qk.forward({ query: Q, key: K, value: V, score: name, seed: 7 });
      assert.deepEqual([r.weights.rows, r.weights.cols], [5, 6]);
      assert.deepEqual([r.output.rows, r.output.cols], [5, 3]);
      for (const m of [r.rawScores, r.scores, r.maskedScores, r.weights, r.output]) assertFinite(m.data, name);
      assertRowStochastic(r.weights, name);
      assert.deepEqual(Object.keys(r.params).sort(), [...info.params].sort(), `${name} params`);
    });
  }

  test('every registered function runs (the list comes from C++, not from this test)', () => {
    const Q = randomMatrix(4, 3, 11), K = randomMatrix(5, 3, 12), V = randomMatrix(5, 2, 13);
    for (const name of scoreNames) {
      const r = qk.forward({ query: Q, key: K, value: V, score: name });
      assertFinite(r.weights.data, name);
      assertRowStochastic(r.weights, name);
    }
  });

  test('functions without sameDim accept d_q != d_k', () => {
    const Q = randomMatrix(3, 2, 4), K = randomMatrix(4, 5, 5), V = randomMatrix(4, 3, 6);
    for (const s of qk.scoreFunctions.filter((f) => !f.sameDim)) {
      const r = qk.forward({ query: Q, key: K, value: V, score: s.name });
      assertRowStochastic(r.weights, s.name);
    }
  });

  test('given params are used; missing ones come from the seed (same as initParams)', () => {
    const Q = randomMatrix(3, 4, 21), K = randomMatrix(4, 4, 22), V = randomMatrix(4, 2, 23);
    const a1 = qk.forward({ query: Q, key: K, value: V, score: 'additive', seed: 1, hidden: 6 });
    const a2 = qk.forward({ query: Q, key: K, value: V, score: 'additive', seed: 2, hidden: 6 });
    assert.notDeepEqual(a1.weights, a2.weights, 'different seeds, different parameters');
    assert.deepEqual(a1.params, qk.initParams('additive', 4, 4, 6, 1));
    // Feeding seed 1's parameters with seed 2 reproduces seed 1.
    const again = qk.forward({ query: Q, key: K, value: V, score: 'additive', seed: 2, params: a1.params });
    assert.deepEqual(again.weights, a1.weights);
    // Partial params: v given (d_h = 3), the rest initialised at that hidden size.
    const part = qk.forward({ query: Q, key: K, value: V, score: 'additive', params: { v: [1, -1, 0.5] } });
    assert.deepEqual(Array.from(part.params.v), [1, -1, 0.5]);
    assert.equal(part.params.W_q.rows, 3);
    assert.equal(part.params.W_k.rows, 3);
    assert.deepEqual(Array.from(part.params.b), [0, 0, 0]);
    // Bilinear with W = I is the dot product.
    const I = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]];
    const bil = qk.forward({ query: Q, key: K, value: V, score: 'bilinear', params: { W: I } });
    const dot = qk.forward({ query: Q, key: K, value: V, score: 'dot' });
    assertClose(Array.from(bil.weights.data), Array.from(dot.weights.data), 1e-6, 'bilinear(I) = dot');
  });

  test('linear_concat weights do not depend on the query', () => {
    const K = randomMatrix(4, 3, 31), V = randomMatrix(4, 2, 32);
    const r1 = qk.forward({ query: randomMatrix(2, 3, 33), key: K, value: V, score: 'linear_concat' });
    const r2 = qk.forward({ query: randomMatrix(2, 3, 34), key: K, value: V, score: 'linear_concat' });
    assertClose(Array.from(r1.weights.data), Array.from(r2.weights.data), 1e-6, 'weights');
  });
});

describe('masks', () => {
  test('keyLength masks the padded keys: weights exactly 0, maskedScores -Infinity', () => {
    const r = qk.forward({ ...base(), keyLength: 2 });
    for (const [i, row] of toRows(r.weights).entries()) {
      assert.equal(row[2], 0, `row ${i}`);
      assertClose(row[0] + row[1], 1, 1e-6, `row ${i} sum`);
    }
    for (const row of toRows(r.maskedScores)) assert.equal(row[2], -Infinity);
    for (const row of toRows(r.scores)) assert.ok(Number.isFinite(row[2]), 'scores are before the mask');
    // Same as dropping the third key.
    const dropped = qk.forward({ query: X, key: X.slice(0, 2), value: X.slice(0, 2) });
    assertClose(toRows(r.output), toRows(dropped.output), 1e-6, 'output');
  });

  test('keyLength = 0: zero weights and output, logsumexp -Infinity, no NaN', () => {
    const r = qk.forward({ ...base(), keyLength: 0 });
    assert.ok(r.weights.data.every((x) => x === 0), 'weights');
    assert.ok(r.output.data.every((x) => x === 0), 'output');
    assert.ok(r.maskedScores.data.every((x) => x === -Infinity), 'maskedScores');
    assert.deepEqual(Array.from(r.logsumexp), [-Infinity, -Infinity, -Infinity]);
    assert.deepEqual(Array.from(r.entropy), [0, 0, 0]);
    assert.deepEqual(Array.from(r.maxWeight), [0, 0, 0]);
    for (const a of [r.weights.data, r.output.data, r.logsumexp, r.entropy, r.maxWeight, r.maskedScores.data]) {
      assert.ok(!a.some(Number.isNaN), 'no NaN');
    }
  });

  test('causal: no weight on future keys, first token attends only to itself', () => {
    const r = qk.forward({ ...base(), causal: true });
    const w = toRows(r.weights);
    assert.deepEqual(w[0], [1, 0, 0]);
    for (let i = 0; i < 3; i++) for (let j = i + 1; j < 3; j++) assert.equal(w[i][j], 0, `(${i}, ${j})`);
    assertRowStochastic(r.weights, 'causal');
    assert.deepEqual(toRows(r.weights)[2], toRows(qk.forward(base()).weights)[2], 'last row unchanged');
  });

  test('causalAlignment bottom_right lets the last query see every key', () => {
    const Q = X.slice(0, 2); // L_q = 2 < L_k = 3
    const tl = toRows(qk.forward({ query: Q, key: X, value: X, causal: true }).weights);
    const br = toRows(qk.forward({ query: Q, key: X, value: X, causal: true, causalAlignment: 'bottom_right' }).weights);
    assert.deepEqual(tl[0].map((x) => x > 0), [true, false, false]);
    assert.deepEqual(br[0].map((x) => x > 0), [true, true, false]);
    assert.deepEqual(br[1].map((x) => x > 0), [true, true, true]);
  });

  test('window {left: 0, right: 0} keeps only the diagonal; Infinity is unbounded', () => {
    const r = qk.forward({ ...base(), window: { left: 0, right: 0 } });
    assert.deepEqual(toRows(r.weights), [[1, 0, 0], [0, 1, 0], [0, 0, 1]]);
    const c = qk.forward({ ...base(), window: { left: Infinity, right: 0 } });
    assert.deepEqual(c.weights, qk.forward({ ...base(), causal: true }).weights, 'right: 0 = causal');
  });

  test('explicit mask: booleans, 0/1 numbers, Uint8Array rows and Matrix form agree', () => {
    const keep = [[true, false, true], [false, true, true], [true, true, false]];
    const r = qk.forward({ ...base(), mask: keep });
    for (const [i, row] of toRows(r.weights).entries())
      row.forEach((p, j) => assert.equal(p > 0, keep[i][j], `(${i}, ${j})`));
    const forms = [
      keep.map((row) => row.map(Number)),
      keep.map((row) => Uint8Array.from(row.map(Number))),
      { rows: 3, cols: 3, data: keep.flat() },
      { rows: 3, cols: 3, data: Uint8Array.from(keep.flat().map(Number)) },
    ];
    for (const m of forms) assert.deepEqual(qk.forward({ ...base(), mask: m }).weights, r.weights);
  });

  test('mask ANDs with keyLength and causal', () => {
    const all = [[true, true, true], [true, true, true], [true, true, true]];
    const r = qk.forward({ ...base(), mask: all, causal: true, keyLength: 2 });
    assert.deepEqual(toRows(r.weights).map((row) => row.map((p) => p > 0)),
      [[true, false, false], [true, true, false], [true, true, false]]);
  });
});

describe('scale, temperature, bias', () => {
  test('a different scale changes the weights; scale 0 gives uniform weights', () => {
    const d = qk.forward(base());
    const s = qk.forward({ ...base(), scale: 1 });
    assert.equal(s.scale, 1);
    assert.notDeepEqual(s.weights, d.weights);
    assert.deepEqual(s.weights, qk.forward({ ...base(), score: 'dot' }).weights, 'scaled_dot with scale 1 = dot');
    const z = qk.forward({ ...base(), scale: 0 });
    assert.equal(z.scale, 0);
    assertClose(Array.from(z.weights.data), Array(9).fill(1 / 3), 1e-7, 'uniform');
    assertClose(Array.from(z.entropy), Array(3).fill(Math.log(3)), 1e-6, 'entropy log L_k');
  });

  test('temperature: higher is flatter, lower is sharper', () => {
    const e = (t) => qk.forward({ ...base(), temperature: t }).entropy[0];
    assert.ok(e(0.25) < e(1) && e(1) < e(4), `${e(0.25)} < ${e(1)} < ${e(4)}`);
    const cold = toRows(qk.forward({ ...base(), temperature: 1e-3 }).weights)[0];
    assertClose(cold, [1, 0, 0], 1e-6, 'tau -> 0 tends to argmax');
  });

  test('bias is added after the scale and before the mask; -Infinity masks', () => {
    const bias = [[0, 2, 0], [0, 0, 0], [-Infinity, 0, 0]];
    const r = qk.forward({ ...base(), bias });
    const d = qk.forward(base());
    const s = toRows(r.scores), s0 = toRows(d.scores);
    assertClose(s[0][1], s0[0][1] + 2, 1e-6, 'scores[0][1]');
    assert.equal(s[2][0], -Infinity);
    assert.equal(toRows(r.weights)[2][0], 0);
    assert.ok(toRows(r.weights)[0][1] > toRows(d.weights)[0][1], 'bias pulls weight');
    assertRowStochastic(r.weights, 'biased');
    const typed = { rows: 3, cols: 3, data: Float32Array.from(bias.flat()) };
    assert.deepEqual(qk.forward({ ...base(), bias: typed }).weights, r.weights, 'Matrix form');
  });
});

describe('normalizers (iterating the registry)', () => {
  const peaked = { query: X, key: X, value: X, score: 'dot', scale: 3 };

  test('the registry lists the five normalizers', () => {
    assert.deepEqual(qk.normalizers.map((n) => n.name),
      ['softmax', 'hard', 'gumbel_softmax', 'sparsemax', 'topk_softmax']);
    assert.deepEqual(qk.normalizers.filter((n) => !n.soft).map((n) => n.name), ['hard']);
  });

  test('every registered normalizer gives row-stochastic finite weights', () => {
    for (const { name } of qk.normalizers) {
      const r = qk.forward({ ...peaked, normalizer: name, topK: 2 });
      assertFinite(r.weights.data, name);
      assertRowStochastic(r.weights, name);
    }
  });

  test('softmax: every weight positive', () => {
    const r = qk.forward({ ...peaked, normalizer: 'softmax' });
    assert.ok(r.weights.data.every((p) => p > 0));
  });

  test('hard: one-hot argmax (lowest index on ties), temperature 0 allowed', () => {
    const r = qk.forward({ ...base(), normalizer: 'hard', temperature: 0 });
    assert.deepEqual(toRows(r.weights), [[1, 0, 0], [0, 1, 0], [0, 0, 1]]);
    const tie = qk.forward({ ...base(), normalizer: 'hard', scale: 0 });
    assert.deepEqual(toRows(tie.weights)[0], [1, 0, 0]);
  });

  test('gumbel_softmax: seeded noise, hard gives one-hot', () => {
    const a = qk.forward({ ...base(), normalizer: 'gumbel_softmax', seed: 3 });
    const b = qk.forward({ ...base(), normalizer: 'gumbel_softmax', seed: 3 });
    const c = qk.forward({ ...base(), normalizer: 'gumbel_softmax', seed: 4 });
    assert.deepEqual(a.weights, b.weights, 'same seed, same noise');
    assert.notDeepEqual(a.weights, c.weights, 'different seed, different noise');
    assert.notDeepEqual(a.weights, qk.forward(base()).weights, 'noise changes the weights');
    const h = qk.forward({ ...base(), normalizer: 'gumbel_softmax', seed: 3, hard: true });
    for (const row of toRows(h.weights)) {
      assert.equal(row.filter((p) => p === 1).length, 1);
      assert.equal(row.filter((p) => p === 0).length, 2);
    }
  });

  test('sparsemax: exact zeros on a peaked row', () => {
    const r = qk.forward({ ...peaked, normalizer: 'sparsemax' });
    assert.ok(r.weights.data.some((p) => p === 0), 'sparse');
    assertRowStochastic(r.weights, 'sparsemax');
    // Uniform logits stay uniform.
    assertClose(Array.from(qk.forward({ ...base(), normalizer: 'sparsemax', scale: 0 }).weights.data),
      Array(9).fill(1 / 3), 1e-6, 'uniform');
  });

  test('topk_softmax: exactly k keys kept per row; k >= L_k is softmax', () => {
    const Q = randomMatrix(4, 3, 41), K = randomMatrix(6, 3, 42), V = randomMatrix(6, 2, 43);
    for (const k of [1, 2, 5]) {
      const r = qk.forward({ query: Q, key: K, value: V, normalizer: 'topk_softmax', topK: k });
      for (const row of toRows(r.weights)) assert.equal(row.filter((p) => p > 0).length, k, `k = ${k}`);
      assertRowStochastic(r.weights, `top-${k}`);
    }
    const all = qk.forward({ query: Q, key: K, value: V, normalizer: 'topk_softmax', topK: 6 });
    const soft = qk.forward({ query: Q, key: K, value: V });
    assertClose(Array.from(all.weights.data), Array.from(soft.weights.data), 1e-6, 'k = L_k');
  });
});

describe('results are copies', () => {
  test('earlier results survive memory growth and later calls', () => {
    const r = qk.forward(base());
    const before = Array.from(r.weights.data);
    const L = 700, M = { rows: L, cols: 16, data: new Float32Array(L * 16).fill(0.5) };
    const big = qk.forward({ query: M, key: M, value: M }); // grows the heap (several L x L matrices)
    assert.equal(big.weights.data.length, L * L);
    assert.deepEqual(Array.from(r.weights.data), before);
    r.weights.data[0] = 42; // mutating a result touches nothing inside the module
    assert.deepEqual(Array.from(qk.forward(base()).weights.data), before);
  });
});

test('score modifiers: softcap bounds logits, ALiBi and relative bias shift them', async () => {

  const zeros = [[0, 0], [0, 0], [0, 0]];
  const alibi = qk.forward({ query: zeros, key: zeros, value: zeros, alibiSlope: 0.5 });
  // s_ij = -0.5 |j - i|
  assert.deepEqual(Array.from(alibi.scores.data), [0, -0.5, -1, -0.5, 0, -0.5, -1, -0.5, 0]);
  const rel = qk.forward({ query: zeros, key: zeros, value: zeros, relativeBias: [-1, 0, 1] });
  assert.deepEqual(Array.from(rel.scores.data), [0, 1, 1, -1, 0, 1, -1, -1, 0]);
  const capped = qk.forward({ query: [[1]], key: [[1000], [-1000]], value: [[1], [2]], score: 'dot', softcap: 30 });
  assert.ok(Math.abs(capped.scores.data[0] - 30) < 1e-4);
  assert.ok(Math.abs(capped.scores.data[1] + 30) < 1e-4);
  assert.throws(() => qk.forward({ query: [[1]], key: [[1]], value: [[1]], softcap: 0 }), (e) => e instanceof RangeError && /softcap/.test(e.message));
  assert.throws(() => qk.forward({ query: [[1]], key: [[1]], value: [[1]], relativeBias: [1, 2] }), (e) => e instanceof RangeError && /odd length/.test(e.message));
  const g = qk.backward({ query: [[1, 0]], key: [[1, 0], [0, 1]], value: [[1, 2], [3, 4]], relativeBias: [0.1, 0.2, 0.3] }, [[1, 1]]);
  assert.equal(g.dRelativeBias.length, 3);
  assert.ok(Array.from(g.dRelativeBias).every(Number.isFinite));
});
