// multiHeadForward() and precisionSoftmax(): a sample of each feature and its errors.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { X, load } from './helpers.mjs';

let qk;
before(async () => {
  qk = await load();
});

test('multi-head: shapes, per-head weights sum to 1, fully masked sequence gives zero output', () => {
  const query = Array.from({ length: 6 }, (_, i) => [Math.sin(i), Math.cos(i), i / 6, 1 - i / 6]);
  const r = qk.multiHeadForward({ query, batch: 2, heads: 4, kvHeads: 2, dK: 3, dV: 2, keyLengths: [3, 0], seed: 1 });
  assert.equal(r.output.rows, 6);
  assert.equal(r.output.cols, 4);
  assert.equal(r.heads.length, 8);
  for (let h = 0; h < 4; h++) {
    const w = r.heads[h].weights;
    for (let i = 0; i < w.rows; i++) {
      const sum = w.data.slice(i * w.cols, (i + 1) * w.cols).reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(sum - 1) < 1e-5);
    }
  }
  assert.ok(Array.from(r.output.data.slice(12)).every((x) => x === 0), 'sequence 2 has no keys');
  assert.ok(Array.from(r.heads[4].logsumexp).every((x) => x === -Infinity));
  // One head with identity-free seeded weights differs across seeds.
  const r2 = qk.multiHeadForward({ query, batch: 2, heads: 4, kvHeads: 2, dK: 3, dV: 2, keyLengths: [3, 0], seed: 2 });
  assert.notDeepEqual(Array.from(r.output.data), Array.from(r2.output.data));
});

test('multi-head: per-head T5 tables reweight each head by e^table[bucket], with forward\'s option names', () => {
  const query = Array.from({ length: 5 }, (_, i) => [Math.sin(i), Math.cos(i), i / 5]);
  const t5 = { numBuckets: 4, maxDistance: 8, bidirectional: true };
  const t5Table = [[0.5, -1, 2, 0.25], [0, 0, 0, 0]];
  const base = { query, heads: 2, dK: 3, dV: 2, seed: 3, causal: true };
  const plain = qk.multiHeadForward(base), biased = qk.multiHeadForward({ ...base, t5, t5Table });
  const buckets = qk.t5Buckets({ ...t5, queries: 5 });
  for (let h = 0; h < 2; h++) {
    const w0 = plain.heads[h].weights.data, w1 = biased.heads[h].weights.data;
    for (let i = 0; i < 5; i++) {
      const u = [0, 1, 2, 3, 4].map((j) => w0[i * 5 + j] * Math.exp(t5Table[h][buckets.data[i * 5 + j]]));
      const sum = u.reduce((a, b) => a + b, 0);
      for (let j = 0; j < 5; j++) assert.ok(Math.abs(w1[i * 5 + j] - u[j] / sum) < 1e-5, `head ${h}, (${i}, ${j})`);
    }
  }
  assert.notDeepEqual(Array.from(biased.heads[0].weights.data), Array.from(plain.heads[0].weights.data));
  const bad = (opts, re) => assert.throws(() => qk.multiHeadForward({ ...base, ...opts }), (e) => e instanceof RangeError && re.test(e.message), String(re));
  bad({ t5 }, /t5Table \(heads x t5\.numBuckets, one table per head\) is required/);
  bad({ t5Table }, /t5Table is set but t5/);
  bad({ t5, t5Table: [[1, 2, 3, 4]] }, /t5Table must have shape \(heads, t5\.numBuckets\) = \(2, 4\), got \(1, 4\)/);
  bad({ t5: { ...t5, numBuckets: 1 }, t5Table }, /t5\.numBuckets must be an integer \[2, 2147483647\], got 1/);
});

test('multi-head errors name the argument', () => {
  assert.throws(() => qk.multiHeadForward({ query: X, heads: 3, kvHeads: 2, dK: 2, dV: 2 }),
    (e) => e instanceof RangeError && /kvHeads/.test(e.message));
  assert.throws(() => qk.multiHeadForward({ query: X, heads: 2, dK: 2, dV: 2, keyLengths: [9] }),
    (e) => e instanceof RangeError && /keyLengths/.test(e.message));
  assert.throws(() => qk.multiHeadForward({ query: X, heads: 2, dK: 0, dV: 2 }),
    (e) => e instanceof RangeError && /dK/.test(e.message));
});

test('precision: fill -1e9 in float16 becomes -Infinity and a fully masked row turns NaN; the correct path gives zeros', () => {
  const scores = [[0.7071, 0.7071, 1.4142], [1, 2, 3]];
  const mask = [[true, true, false], [false, false, false]];
  const naive = qk.precisionSoftmax({ scores, mask, dtype: 'float16', method: 'masked_fill', fill: -1e9 });
  assert.equal(naive.constantStored, -Infinity);
  assert.ok(naive.nanCount >= 3, naive.summary);
  assert.ok(Number.isNaN(naive.weights.data[3]));
  assert.ok(Math.abs(naive.weights.data[0] - 0.5) < 1e-3);
  const good = qk.precisionSoftmax({ scores, mask, dtype: 'float16', method: 'correct' });
  assert.equal(good.nanCount, 0);
  assert.deepEqual(Array.from(good.weights.data.slice(3)), [0, 0, 0]);
  assert.ok(Math.abs(good.weights.data[0] - 0.5) < 1e-6);
});

test('precision: softmax without max subtraction overflows in float16 at exp(12)', () => {
  const r = qk.precisionSoftmax({ scores: [[12, 11]], dtype: 'float16', method: 'no_max' });
  assert.ok(r.nanCount > 0 || r.infCount > 0, r.summary);
  const ok = qk.precisionSoftmax({ scores: [[12, 11]], dtype: 'float16' });
  assert.ok(Math.abs(ok.weights.data[0] - 0.731059) < 1e-3);
  assert.throws(() => qk.precisionSoftmax({ scores: [[1]], dtype: 'float8' }), (e) => e instanceof RangeError && /dtype/.test(e.message));
});

test('error messages use the JS option names and JS spellings of special numbers', () => {
  const X3 = [[1, 0], [0, 1], [1, 1]];
  assert.throws(() => qk.forward({ query: X3, key: X3, value: X3, bias: [[0, 1], [1, 0]] }),
    (e) => e instanceof RangeError && /^bias \(L_q x L_k\)/.test(e.message) && !/bias\.dense/.test(e.message));
  assert.throws(() => qk.forward({ query: X3, key: X3, value: X3, softcap: 1e-46 }),
    (e) => e instanceof RangeError && /^softcap/.test(e.message));
  assert.throws(() => qk.forward({ query: [[1e20]], key: [[-1e20], [1]], value: [[1], [2]], score: 'dot' }),
    (e) => e instanceof RangeError && /overflowed/.test(e.message) && /-Infinity/.test(e.message));
  assert.throws(() => qk.multiHeadForward({ query: X3, heads: 3, kvHeads: 2, dK: 2, dV: 2 }),
    (e) => /kvHeads/.test(e.message) && !/kv_heads/.test(e.message));
});

test('initParams accepts hidden = 0 for scores without a hidden layer; additive still needs it', () => {
  assert.ok(qk.initParams('bilinear', 2, 3, 0, 0).W);
  assert.throws(() => qk.initParams('additive', 2, 3, 0, 0), (e) => e instanceof RangeError && /d_h/.test(e.message));
});

test('precisionSoftmax names a score that overflows the dtype on the correct path', () => {
  assert.throws(() => qk.precisionSoftmax({ scores: [[70000, 0]] }),
    (e) => e instanceof RangeError && /70000/.test(e.message) && /float16/.test(e.message));
  const naive = qk.precisionSoftmax({ scores: [[70000, 0]], method: 'no_max' });
  assert.ok(naive.infCount > 0 || naive.nanCount > 0, naive.summary);
});
