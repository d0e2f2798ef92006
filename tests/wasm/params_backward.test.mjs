// initParams (seeded, deterministic) and backward (shapes, finiteness, and agreement
// with central finite differences of forward, so wiring mistakes such as swapped
// gradients fail here).
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { X, assertClose, assertFinite, load, randomMatrix, toRows } from './helpers.mjs';

let qk;
before(async () => {
  qk = await load();
});

describe('initParams', () => {
  test('deterministic for a seed, different across seeds', () => {
    for (const { name, params } of qk.scoreFunctions) {
      const a = qk.initParams(name, 3, 5, 4, 42);
      const b = qk.initParams(name, 3, 5, 4, 42);
      const c = qk.initParams(name, 3, 5, 4, 43);
      assert.deepEqual(Object.keys(a).sort(), [...params].sort(), `${name}: fields`);
      assert.deepEqual(a, b, `${name}: same seed`);
      const random = params.filter((p) => p !== 'b'); // additive b starts at 0
      for (const p of random) assert.notDeepEqual(a[p], c[p], `${name}.${p}: different seed`);
    }
  });

  test('shapes follow the .d.ts', () => {
    const add = qk.initParams('additive', 3, 5, 4, 1);
    assert.deepEqual([add.W_q.rows, add.W_q.cols], [4, 3]);
    assert.deepEqual([add.W_k.rows, add.W_k.cols], [4, 5]);
    assert.equal(add.v.length, 4);
    assert.deepEqual(Array.from(add.b), [0, 0, 0, 0]);
    assert.ok(add.v instanceof Float32Array);
    assert.ok(add.W_q.data instanceof Float32Array);
    const bil = qk.initParams('bilinear', 3, 5, 4, 1);
    assert.deepEqual([bil.W.rows, bil.W.cols], [3, 5]);
    assert.equal(qk.initParams('linear_concat', 3, 5, 4, 1).w.length, 8);
    assert.deepEqual(qk.initParams('dot', 3, 3, 4, 1), {});
    assertFinite(add.W_q.data, 'W_q');
  });

  test('bilinear starts near the identity', () => {
    const W = toRows(qk.initParams('bilinear', 4, 4, 4, 5).W);
    for (let i = 0; i < 4; i++) for (let j = 0; j < 4; j++) assert.ok(Math.abs(W[i][j] - (i === j ? 1 : 0)) < 0.5);
  });

  test('forward with the same seed uses exactly initParams', () => {
    const Q = randomMatrix(2, 3, 1), K = randomMatrix(4, 5, 2), V = randomMatrix(4, 2, 3);
    for (const name of ['bilinear', 'additive', 'linear_concat']) {
      const r = qk.forward({ query: Q, key: K, value: V, score: name, seed: 9, hidden: 6 });
      assert.deepEqual(r.params, qk.initParams(name, 3, 5, 6, 9), name);
    }
  });

  test('version is a semantic version string', () => {
    assert.match(qk.version, /^\d+\.\d+\.\d+/);
  });
});

/** sum(G .* output) for the given options. */
function loss(options, G) {
  const out = toRows(qk.forward(options).output);
  let s = 0;
  out.forEach((row, i) => row.forEach((o, j) => { s += G[i][j] * o; }));
  return s;
}

/** Replaces entry (i, j) of the nested matrix at `path` (e.g. ['query'] or ['params', 'W']). */
function perturbed(options, path, i, j, delta) {
  const o = structuredClone(options);
  let holder = o;
  for (const k of path.slice(0, -1)) holder = holder[k];
  const key = path[path.length - 1];
  if (j === undefined) holder[key][i] += delta; // vector
  else holder[key][i][j] += delta;
  return o;
}

/** Central difference of loss w.r.t. every entry at `path`, compared with `analytic` (Matrix or Float32Array). */
function checkGradient(options, G, path, analytic, what) {
  const eps = 1e-2;
  let holder = options;
  for (const k of path) holder = holder[k];
  const isVector = !Array.isArray(holder[0]);
  const a = isVector ? [Array.from(analytic)] : toRows(analytic);
  const rows = isVector ? [holder] : holder;
  rows.forEach((row, i) => row.forEach((_, j) => {
    const [ii, jj] = isVector ? [j, undefined] : [i, j];
    const num = (loss(perturbed(options, path, ii, jj, eps), G) - loss(perturbed(options, path, ii, jj, -eps), G)) / (2 * eps);
    const ana = a[i][j];
    assert.ok(Math.abs(num - ana) <= 3e-3 + 2e-2 * Math.abs(num),
      `${what}[${i}][${j}]: analytic ${ana}, finite difference ${num}`);
  }));
}

describe('backward', () => {
  const Q = randomMatrix(3, 4, 101), K = randomMatrix(4, 4, 102), V = randomMatrix(4, 3, 103);
  const G = randomMatrix(3, 3, 104);

  test('shapes and finiteness for every scoring function', () => {
    for (const { name, params } of qk.scoreFunctions) {
      const g = qk.backward({ query: Q, key: K, value: V, score: name }, G);
      assert.deepEqual([g.dQuery.rows, g.dQuery.cols], [3, 4], `${name} dQuery`);
      assert.deepEqual([g.dKey.rows, g.dKey.cols], [4, 4], `${name} dKey`);
      assert.deepEqual([g.dValue.rows, g.dValue.cols], [4, 3], `${name} dValue`);
      for (const m of [g.dQuery, g.dKey, g.dValue]) assertFinite(m.data, name);
      assert.deepEqual(Object.keys(g.dParams).sort(), [...params].sort(), `${name} dParams`);
      assert.ok(Number.isFinite(g.dTemperature), `${name} dTemperature`);
      assert.equal(g.dBias, undefined, 'no bias, no dBias');
    }
  });

  test('dValue = weights^T gradOutput', () => {
    const opts = { query: Q, key: K, value: V };
    const W = toRows(qk.forward(opts).weights);
    const dV = toRows(qk.backward(opts, G).dValue);
    for (let j = 0; j < 4; j++)
      for (let c = 0; c < 3; c++) {
        let s = 0;
        for (let i = 0; i < 3; i++) s += W[i][j] * G[i][c];
        assertClose(dV[j][c], s, 1e-5, `dValue[${j}][${c}]`);
      }
  });

  for (const score of ['scaled_dot', 'dot', 'cosine', 'bilinear', 'additive', 'linear_concat']) {
    test(`${score}: dQuery, dKey, dValue and dParams match finite differences`, () => {
      // Explicit params so the perturbed copies keep them fixed.
      const params = qk.forward({ query: Q, key: K, value: V, score, seed: 5 }).params;
      const nested = Object.fromEntries(Object.entries(params).map(([k, p]) =>
        [k, ArrayBuffer.isView(p) ? Array.from(p) : toRows(p)]));
      const opts = { query: Q, key: K, value: V, score, params: nested, temperature: 0.7 };
      const g = qk.backward(opts, G);
      checkGradient(opts, G, ['query'], g.dQuery, `${score} dQuery`);
      checkGradient(opts, G, ['key'], g.dKey, `${score} dKey`);
      checkGradient(opts, G, ['value'], g.dValue, `${score} dValue`);
      for (const k of Object.keys(nested)) checkGradient(opts, G, ['params', k], g.dParams[k], `${score} dParams.${k}`);
    });
  }

  test('dTemperature and dBias match finite differences', () => {
    const bias = randomMatrix(3, 4, 105);
    const opts = { query: Q, key: K, value: V, temperature: 0.8, bias };
    const g = qk.backward(opts, G);
    const eps = 1e-2;
    const num = (loss({ ...opts, temperature: 0.8 + eps }, G) - loss({ ...opts, temperature: 0.8 - eps }, G)) / (2 * eps);
    assert.ok(Math.abs(num - g.dTemperature) <= 3e-3 + 2e-2 * Math.abs(num), `dTemperature ${g.dTemperature} vs ${num}`);
    assert.deepEqual([g.dBias.rows, g.dBias.cols], [3, 4]);
    checkGradient(opts, G, ['bias'], g.dBias, 'dBias');
  });

  test('masked entries and fully masked rows get exactly zero gradient', () => {
    const bias = [[0, -Infinity, 0.5, 0], [0, 0, 0, 0], [0.5, 0, 0, 0]];
    const g = qk.backward({ query: Q, key: K, value: V, causal: true, bias }, G);
    const dB = toRows(g.dBias);
    assert.equal(dB[0][1], 0, 'masked by bias');
    for (let i = 0; i < 3; i++) for (let j = i + 1; j < 4; j++) assert.equal(dB[i][j], 0, `causal (${i}, ${j})`);
    const z = qk.backward({ query: Q, key: K, value: V, keyLength: 0 }, G);
    for (const m of [z.dQuery, z.dKey, z.dValue]) assert.ok(m.data.every((x) => x === 0));
    assert.equal(z.dTemperature, 0);
  });

  test('hard attention has zero score gradient; the worked example has a gradient', () => {
    const h = qk.backward({ query: X, key: X, value: X, normalizer: 'hard' }, X);
    assert.ok(h.dQuery.data.every((x) => x === 0) && h.dKey.data.every((x) => x === 0));
    assert.ok(h.dValue.data.some((x) => x !== 0), 'values still get gradient');
    const s = qk.backward({ query: X, key: X, value: X }, X);
    assert.ok(s.dQuery.data.some((x) => x !== 0));
  });
});
